// Bundles @tg-ingest/webapp's script entry with the client into the one minified file the service serves at
// /sdk/webapp.js. Run by the build, after tsc has built both packages.
import { build } from 'esbuild';

await build({
  entryPoints: ['integrations/webapp/dist/script.js'],
  outfile: 'integrations/webapp/dist/webapp.min.js',
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  legalComments: 'none',
  logLevel: 'warning',
});
