import { test } from 'vitest';
import { startCitus } from '../bench/lib/citus.js';
import { startServiceOn } from '../test/helpers/faults.js';
test('serve on citus', async () => {
  const c = await startCitus();
  try {
    const svc = await startServiceOn(c.url());
    console.log('service up', svc.httpUrl);
    await svc.stop();
  } finally { await c.stop(); }
});
