// The benchmarks and the tests sign initData the same way.
export { makeInitData, newSigner, type InitDataOptions, type Signer } from '../../bench/lib/initdata.js';
