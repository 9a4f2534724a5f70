// What the worker pool and the inline queue answer when they cannot run a task; src/http/replies.ts maps them.
/** The pool's queue (or a lane's) is full: shed the request rather than grow memory. */
export class PoolOverloaded extends Error {
  constructor() {
    super('the worker pool is overloaded');
    this.name = 'PoolOverloaded';
  }
}

/** A task threw. `byInput`: the request's data caused it (400); otherwise a bug (500). */
export class TaskFailed extends Error {
  constructor(
    readonly byInput: boolean,
    message: string,
  ) {
    super(message);
    this.name = 'TaskFailed';
  }
}
