/** A CancelRequest to the upstream Postgres, as libpq sends it. */
import { connect } from 'node:net';
import { buildCancelRequest } from '../protocol/index.js';

/** Where a CancelRequest for one upstream backend goes, and the key it needs. */
export interface CancelTarget {
  host: string;
  port: number;
  processId: number;
  secretKey: number;
}

/**
 * Asks Postgres to cancel what one backend is running: a CancelRequest on a connection of its
 * own, as libpq sends it. Resolves true once sent, false if the server could not be reached.
 */
export function cancelUpstream(target: CancelTarget): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: target.host, port: target.port }, () => socket.end(buildCancelRequest(target.processId, target.secretKey)));
    socket.on('close', (hadError) => resolve(!hadError));
    socket.on('error', () => resolve(false));
    socket.setTimeout(5_000, () => socket.destroy());
  });
}
