/** Free ports for servers the tests start: the bench's helper (below the ephemeral range). */
export { freePort } from '../../bench/lib/proc.js';
