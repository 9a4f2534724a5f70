// Bundles @tg-ingest/webapp's script entry with the client into the one minified file the service serves at
// /sdk/webapp.js. Run by the build, after tsc has built both packages.
import { build } from 'esbuild';

await build({
  entryPoints: ['integrations/webapp/dist/script.js'],
  outfile: 'integrations/webapp/dist/webapp.min.js',
  bundle: true,
  minify: true,
  format: 'iife',
  // Web views of 2021 on (iOS and Safari 15, Chrome 91, Firefox 90), where private class members run natively and
  // their names minify. Lowered for older ones they would cost a helper per access; the build before this floor needed
  // Safari 13.1 already.
  target: ['chrome91', 'edge91', 'firefox90', 'safari15', 'ios15'],
  legalComments: 'none',
  logLevel: 'warning',
});
