// The OpenAPI 3.1 document served at GET /openapi.json.
export function openApiDocument(): Record<string, unknown> {
  return { openapi: '3.1.0', info: { title: 'tg-ingest', version: '1' }, paths: {} };
}
