// How the writer's PostgreSQL client fails: the server's refusal of a statement, or the connection gone.
/** An ErrorResponse: `code` is the SQLSTATE. */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly constraint_name: string | undefined,
    readonly detail: string | undefined,
  ) {
    super(message);
    this.name = 'PgError';
  }
}

/** The socket failed, closed, or the server broke the protocol: the session is gone. */
export class ConnectionLost extends Error {
  readonly code = 'CONNECTION_LOST';
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionLost';
  }
}

/** `copyData`: the rows of a COPY FROM STDIN, in one piece or several (sent in order). */
