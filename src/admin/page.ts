// The admin web page at /admin/: static files, no build step, fed by the admin API.
import type { HttpServer } from '../http/server.js';

export function mountAdminPage(server: HttpServer): void {
  server.route('get', '/admin/', () => ({ status: 200, contentType: 'text/html; charset=utf-8', body: '<!doctype html><title>tg-ingest admin</title>' }));
}
