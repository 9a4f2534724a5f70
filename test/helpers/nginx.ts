// Debian's nginx in front of real instances, with the shipped deploy/nginx.conf: a copy of it in a
// temporary prefix where only the instances' ports, the listen address and the paths of logs and
// temporary files are changed, so the directives under test are the shipped ones.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.js';

export const NGINX_CONF = fileURLToPath(new URL('../../deploy/nginx.conf', import.meta.url));

/** The nginx binary: Debian's in /usr/sbin (not on a non-root PATH), else whatever PATH has. */
export function nginxBinary(): string {
  if (existsSync('/usr/sbin/nginx')) return '/usr/sbin/nginx';
  const found = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).stdout.trim();
  if (found === '')
    throw new Error(
      'nginx is missing: `make test` installs it (scripts/system-deps.sh nginx), or apt-get install nginx',
    );
  return found;
}

/** `nginx -t` of a configuration file; the pid file and the error log go to `dir`. */
export function checkNginxConf(conf: string, dir: string): { ok: boolean; output: string } {
  const r = spawnSync(nginxBinary(), ['-t', '-q', '-p', `${dir}/`, '-c', conf, '-g', `pid ${dir}/nginx-t.pid;`], {
    encoding: 'utf8',
  });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

/** Every match of `pattern` replaced; throws unless there are `count` of them (at least one for 'some'). */
function replaceExactly(
  text: string,
  pattern: RegExp,
  replacement: string | ((...m: string[]) => string),
  count: number | 'some',
): string {
  const all = new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`);
  const matches = text.match(all)?.length ?? 0;
  if (count === 'some' ? matches === 0 : matches !== count)
    throw new Error(`deploy/nginx.conf: expected ${count} match(es) of ${pattern}, found ${matches}`);
  return text.replace(all, replacement as string);
}

/**
 * The shipped file with each upstream's `server 127.0.0.1:…` lines replaced by one line per given
 * port (with the parameters of the shipped first line), nginx listening on 127.0.0.1:listenPort,
 * and logs and temporary files in `dir`.
 */
export function renderNginxConf(
  shipped: string,
  o: { instancePorts: number[]; listenPort: number; dir: string },
): string {
  let text = replaceExactly(
    shipped,
    /^([ \t]*)server 127\.0\.0\.1:\d+( [^;\n]*)?;\n(?:[ \t]*server 127\.0\.0\.1:\d+(?: [^;\n]*)?;\n)*/m,
    (_all, indent: string, params = '') =>
      o.instancePorts.map((p) => `${indent}server 127.0.0.1:${p}${params};\n`).join(''),
    'some',
  );
  text = replaceExactly(
    text,
    /^([ \t]*)listen 80 default_server;/m,
    (_all, indent: string) => `${indent}listen 127.0.0.1:${o.listenPort} default_server;`,
    1,
  );
  return relocateNginxPaths(text, o.dir);
}

/** The file with its logs and temporary files in `dir` instead of Debian's /var/log/nginx and /var/lib/nginx. */
function relocateNginxPaths(text: string, dir: string): string {
  text = replaceExactly(text, /\/var\/log\/nginx\//, `${dir}/`, 'some');
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((k) => `    ${k}_temp_path ${dir}/${k}_temp;\n`)
    .join('');
  return replaceExactly(text, /^http \{\n/m, `http {\n${temp}`, 1);
}

export interface RunningNginx {
  url: string;
  port: number;
  dir: string;
  conf: string;
  proc: ChildProcess;
  /** The access log so far (nginx writes it in 64 KiB buffers, at least every second; all of it once stopped). */
  accessLog(): string;
  errorLog(): string;
  /** Stops nginx gracefully and removes its directory; the logs stay readable. */
  stop(): Promise<void>;
}

async function waitListening(port: number, proc: ChildProcess, dir: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`nginx exited with ${proc.exitCode}:\n${readIf(join(dir, 'error.log'))}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nginx did not listen on ${port}:\n${readIf(join(dir, 'error.log'))}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function readIf(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** nginx in the foreground with the rendered copy of deploy/nginx.conf in front of the given instance ports. */
export async function startNginx(instancePorts: number[]): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-ingest-nginx-'));
  // The workers run as www-data when nginx starts as root: they must reach their temporary files.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, renderNginxConf(readFileSync(NGINX_CONF, 'utf8'), { instancePorts, listenPort: port, dir }));
  const output: string[] = [];
  const proc = spawn(nginxBinary(), ['-p', `${dir}/`, '-c', conf, '-g', `daemon off; pid ${dir}/nginx.pid;`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  proc.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = once(proc, 'exit');
  try {
    await waitListening(port, proc, dir, 10_000);
  } catch (err) {
    if (proc.exitCode === null) proc.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${output.join('')}`);
  }
  let final: { access: string; error: string } | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    conf,
    proc,
    accessLog: () => final?.access ?? readIf(join(dir, 'access.log')),
    errorLog: () => final?.error ?? readIf(join(dir, 'error.log')),
    async stop() {
      if (final !== null) return;
      if (proc.exitCode === null && proc.signalCode === null) {
        // SIGQUIT: finish open requests, flush the access log, exit.
        proc.kill('SIGQUIT');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      final = { access: readIf(join(dir, 'access.log')), error: readIf(join(dir, 'error.log')) };
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
