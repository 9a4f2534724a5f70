// A highly available PostgreSQL on this machine, as deploy/patroni/ describes it: one etcd, three PostgreSQL
// nodes managed by Patroni (synchronous mode) and HAProxy in front, on loopback ports under a temporary
// directory. The configuration files are deploy/patroni/'s own, rendered with this machine's ports.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connect } from '../../src/db/connect.js';
import { freePort } from '../../src/db/embedded.js';

const run = promisify(execFile);
const DEPLOY = fileURLToPath(new URL('../../deploy/patroni/', import.meta.url));
/** The oldest PostgreSQL the service supports, as Debian 12 ships it. */
const PG_BIN = '/usr/lib/postgresql/15/bin';
const ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LC_ALL: 'C.UTF-8',
  LANG: 'C.UTF-8',
};

/**
 * A TCP relay standing for the network between a node and the rest: the other nodes, HAProxy and etcd reach the node
 * (and the node reaches etcd) only through it. Cut, it passes nothing either way and answers nothing, as a dropped
 * network does (no reset, no refusal); healed, the connections it held die and new ones pass again.
 */
export class Relay {
  private server: Server | null = null;
  private readonly open = new Set<Socket>();
  private cut = false;
  port = 0;

  constructor(private readonly target: number) {}

  async start(): Promise<void> {
    this.port = await freePort();
    this.server = createServer((client) => {
      this.track(client);
      if (this.cut) {
        client.pause();
        return;
      }
      const upstream = tcpConnect(this.target, '127.0.0.1');
      this.track(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  private track(s: Socket): void {
    this.open.add(s);
    s.on('error', () => s.destroy());
    s.on('close', () => {
      this.open.delete(s);
    });
  }

  blackhole(): void {
    this.cut = true;
    for (const s of this.open) {
      s.unpipe();
      s.pause();
    }
  }

  heal(): void {
    this.cut = false;
    for (const s of this.open) s.destroy();
  }

  async stop(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise((r) => this.server?.close(r) ?? r(null));
  }
}

export interface PatroniNode {
  name: string;
  pgPort: number;
  restPort: number;
  /** The node's network: its PostgreSQL and REST API as the others reach them, its way to etcd. */
  pgRelay: Relay;
  restRelay: Relay;
  etcdRelay: Relay;
  dataDir: string;
  config: string;
  proc: ChildProcess | null;
}

function render(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_, k: string) => {
    const v = values[k];
    if (v === undefined) throw new Error(`no value for {{${k}}}`);
    return v;
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => null);
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function status(url: string): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
  await res.arrayBuffer();
  return res.status;
}

/** PostgreSQL refuses to run as root: Patroni and the PostgreSQL it starts run as the system user `postgres`. */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const [u, g] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export class PatroniCluster {
  readonly password = randomBytes(12).toString('hex');
  private etcd: ChildProcess | null = null;
  private haproxy: ChildProcess | null = null;
  private constructor(
    readonly dir: string,
    readonly nodes: PatroniNode[],
    readonly proxyPort: number,
    private readonly owner: { uid: number; gid: number } | null,
  ) {}

  /** The database URL a service uses: through HAProxy, to whichever node is the primary. */
  url(database = 'postgres'): string {
    return `postgres://postgres:${this.password}@127.0.0.1:${this.proxyPort}/${database}`;
  }

  static async start(): Promise<PatroniCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'tg-ingest-patroni-'));
    const owner = process.getuid?.() === 0 ? await postgresUser() : null;
    const nodes: PatroniNode[] = [];
    for (let i = 1; i <= 3; i++) {
      const name = `pg${i}`;
      const pgPort = await freePort();
      const restPort = await freePort();
      nodes.push({
        name,
        pgPort,
        restPort,
        pgRelay: new Relay(pgPort),
        restRelay: new Relay(restPort),
        etcdRelay: new Relay(0),
        dataDir: join(dir, name),
        config: join(dir, `${name}.yml`),
        proc: null,
      });
    }
    const cluster = new PatroniCluster(dir, nodes, await freePort(), owner);
    try {
      await cluster.startEtcd();
      const template = readFileSync(join(DEPLOY, 'patroni.yml'), 'utf8');
      for (const n of nodes) {
        n.etcdRelay = new Relay(cluster.etcdPort);
        for (const r of [n.pgRelay, n.restRelay, n.etcdRelay]) await r.start();
      }
      const scope = `tg-ingest-${randomBytes(3).toString('hex')}`;
      for (const n of nodes) {
        writeFileSync(
          n.config,
          render(template, {
            SCOPE: scope,
            NODE: n.name,
            NODE_HOST: '127.0.0.1',
            REST_PORT: String(n.restPort),
            PG_PORT: String(n.pgPort),
            REST_CONNECT: `127.0.0.1:${n.restRelay.port}`,
            PG_CONNECT: `127.0.0.1:${n.pgRelay.port}`,
            ETCD_HOSTS: `127.0.0.1:${n.etcdRelay.port}`,
            ETCD_USE_PROXIES: 'true',
            NETWORK: '127.0.0.1/32',
            DATA_DIR: n.dataDir,
            BIN_DIR: PG_BIN,
            SOCKET_DIR: dir,
            SHARED_BUFFERS: '128MB',
            REPLICATION_USER: 'replicator',
            REST_USER: 'patroni',
            REST_PASSWORD: cluster.password,
            SUPERUSER_PASSWORD: cluster.password,
            REPLICATION_PASSWORD: cluster.password,
            REWIND_PASSWORD: cluster.password,
          }),
        );
      }
      if (owner !== null) {
        chownSync(dir, owner.uid, owner.gid);
        for (const n of nodes) chownSync(n.config, owner.uid, owner.gid);
      }
      // The first node bootstraps the cluster; the others clone it once it leads.
      cluster.startNode(nodes[0]!);
      await until('the first node to lead', 60_000, async () =>
        (await status(`http://127.0.0.1:${nodes[0]!.restPort}/primary`)) === 200 ? true : null,
      );
      for (const n of nodes.slice(1)) cluster.startNode(n);
      for (const n of nodes.slice(1)) await cluster.waitReplica(n, 90_000);
      // Synchronous mode names a standby once one streams.
      await until('a synchronous standby', 30_000, async () =>
        (await cluster.members()).some((m) => m.role === 'sync_standby') ? true : null,
      );
      cluster.startHaproxy();
      // HAProxy counts every server up until its checks say otherwise (two failures, ~2 s): until then a connection
      // can land on a standby. Wait until several fresh connections in a row reach the primary.
      await until('HAProxy to reach the primary alone', 30_000, async () => {
        for (let i = 0; i < 6; i++) {
          const sql = connect(cluster.url(), { max: 1, name: 'ha-test' });
          try {
            const [r] = await sql<{ standby: boolean }[]>`SELECT pg_is_in_recovery() AS standby`;
            if (r!.standby) return null;
          } finally {
            await sql.end({ timeout: 1 });
          }
        }
        return true;
      });
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw new Error(`${(err as Error).message}\n${cluster.logTail()}`);
    }
  }

  private etcdPort = 0;

  private log(name: string): NodeJS.WritableStream {
    return createWriteStream(join(this.dir, `${name}.log`), { flags: 'a' });
  }

  /** The last lines of every log, for a failure message. */
  logTail(): string {
    const out: string[] = [];
    for (const name of ['etcd', 'haproxy', ...this.nodes.map((n) => n.name)]) {
      const file = join(this.dir, `${name}.log`);
      if (!existsSync(file)) continue;
      out.push(`--- ${name}`, ...readFileSync(file, 'utf8').trim().split('\n').slice(-15));
    }
    return out.join('\n');
  }

  private async startEtcd(): Promise<void> {
    this.etcdPort = await freePort();
    const peer = await freePort();
    const data = join(this.dir, 'etcd');
    mkdirSync(data, { mode: 0o700 });
    const proc = spawn(
      'etcd',
      [
        '--name=e1',
        `--data-dir=${data}`,
        `--listen-client-urls=http://127.0.0.1:${this.etcdPort}`,
        `--advertise-client-urls=http://127.0.0.1:${this.etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-cluster=e1=http://127.0.0.1:${peer}`,
      ],
      { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const log = this.log('etcd');
    proc.stdout!.pipe(log, { end: false });
    proc.stderr!.pipe(log, { end: false });
    this.etcd = proc;
    await until('etcd', 30_000, async () =>
      (await status(`http://127.0.0.1:${this.etcdPort}/health`)) === 200 ? true : null,
    );
  }

  private startHaproxy(): void {
    const servers = this.nodes
      .map((n) => `    server ${n.name} 127.0.0.1:${n.pgRelay.port} maxconn 150 check port ${n.restRelay.port}`)
      .join('\n');
    const cfg = join(this.dir, 'haproxy.cfg');
    writeFileSync(
      cfg,
      render(readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8'), {
        LISTEN: `127.0.0.1:${this.proxyPort}`,
        SERVERS: servers,
      }),
    );
    const proc = spawn('haproxy', ['-db', '-f', cfg], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = this.log('haproxy');
    proc.stdout!.pipe(log, { end: false });
    proc.stderr!.pipe(log, { end: false });
    this.haproxy = proc;
  }

  /**
   * How a program runs as the cluster's owner: its home and working directory the cluster's own, which that user can
   * enter (PostgreSQL's programs stop when the working directory they inherit is one they cannot, such as a clone
   * under a directory only root may enter).
   */
  private asOwner(): { env: NodeJS.ProcessEnv; cwd: string; uid?: number; gid?: number } {
    return { env: { ...ENV, HOME: this.dir }, cwd: this.dir, ...(this.owner ?? {}) };
  }

  /** Starts (or restarts) a node's Patroni, which starts its PostgreSQL. */
  startNode(n: PatroniNode): void {
    // A process group of its own: Patroni runs as two processes (the one started and a child), and kill -9 of the
    // node must reach both, or the child carries on and a restarted node runs two Patronis on one data directory.
    const proc = spawn('patroni', [n.config], {
      ...this.asOwner(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const log = this.log(n.name);
    proc.stdout!.pipe(log, { end: false });
    proc.stderr!.pipe(log, { end: false });
    proc.once('exit', (code, signal) => log.write(`--- patroni exited: ${code ?? signal}\n`));
    n.proc = proc;
  }

  /** Patroni's view of the cluster: each member's name and role (leader, sync_standby, replica). */
  async members(): Promise<{ name: string; role: string; state: string }[]> {
    for (const n of this.nodes) {
      if (n.proc === null) continue;
      try {
        const res = await fetch(`http://127.0.0.1:${n.restPort}/cluster`, { signal: AbortSignal.timeout(1000) });
        const body = (await res.json()) as { members: { name: string; role: string; state: string }[] };
        return body.members;
      } catch {
        // that node does not answer: ask the next
      }
    }
    return [];
  }

  /** Until every node runs, one leads and one is its synchronous standby: a cluster ready for the next fault. */
  async awaitHealthy(timeoutMs = 90_000): Promise<void> {
    await until('a healthy cluster (a leader, a synchronous standby, every node running)', timeoutMs, async () => {
      const members = await this.members();
      const running = members.filter((m) => m.state === 'running' || m.state === 'streaming');
      return members.length === this.nodes.length &&
        running.length === members.length &&
        members.some((m) => m.role === 'leader') &&
        members.some((m) => m.role === 'sync_standby')
        ? true
        : null;
    });
  }

  /** The node whose REST API says it is the primary. */
  async primary(): Promise<PatroniNode | null> {
    for (const n of this.nodes) {
      if (n.proc === null) continue;
      if ((await status(`http://127.0.0.1:${n.restPort}/primary`).catch(() => 0)) === 200) return n;
    }
    return null;
  }

  /** Waits for a primary other than `old`; the moment Patroni's REST API first said so. */
  async awaitPromotion(old: PatroniNode, timeoutMs = 60_000): Promise<{ node: PatroniNode; at: number }> {
    return until('a new primary', timeoutMs, async () => {
      for (const n of this.nodes) {
        if (n === old || n.proc === null) continue;
        if ((await status(`http://127.0.0.1:${n.restPort}/primary`).catch(() => 0)) === 200)
          return { node: n, at: performance.now() };
      }
      return null;
    });
  }

  /** Waits until `n` streams from the primary as a standby. */
  async waitReplica(n: PatroniNode, timeoutMs = 90_000): Promise<void> {
    await until(`${n.name} to stream as a standby`, timeoutMs, async () => {
      const res = await fetch(`http://127.0.0.1:${n.restPort}/replica`, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { state?: string; replication_state?: string };
      return res.status === 200 && body.state === 'running' && (body.replication_state ?? 'streaming') === 'streaming'
        ? true
        : null;
    });
  }

  /** kill -9 of a node's Patroni and of its postmaster: the machine's power cord, as far as the node is concerned. */
  async kill(n: PatroniNode): Promise<void> {
    const pidFile = join(n.dataDir, 'postmaster.pid');
    const postmaster = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : Number.NaN;
    if (n.proc?.pid !== undefined) {
      try {
        process.kill(-n.proc.pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
    if (Number.isInteger(postmaster)) {
      try {
        process.kill(postmaster, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const proc = n.proc;
    if (proc !== null && proc.exitCode === null && proc.signalCode === null)
      await new Promise((r) => proc.once('exit', r));
    n.proc = null;
  }

  /** Cuts a node's network: nothing reaches it or leaves it, its processes keep running. */
  cutNetwork(n: PatroniNode): void {
    for (const r of [n.pgRelay, n.restRelay, n.etcdRelay]) r.blackhole();
  }

  healNetwork(n: PatroniNode): void {
    for (const r of [n.pgRelay, n.restRelay, n.etcdRelay]) r.heal();
  }

  /** A planned switchover to `candidate` through patronictl, as an operator does it. */
  async switchover(from: PatroniNode, candidate: PatroniNode): Promise<void> {
    await run(
      'patronictl',
      ['-c', from.config, 'switchover', '--leader', from.name, '--candidate', candidate.name, '--force'],
      this.asOwner(),
    );
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) if (n.proc !== null) await this.kill(n);
    for (const p of [this.haproxy, this.etcd]) {
      if (p === null || p.exitCode !== null || p.signalCode !== null) continue;
      p.kill('SIGKILL');
      await new Promise((r) => p.once('exit', r));
    }
    for (const n of this.nodes) for (const r of [n.pgRelay, n.restRelay, n.etcdRelay]) await r.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
