// The client's stream held back while the relay waits: frames replayed in order once the wait is
// over, the socket paused only when what is held grows large (or when the wait is for room to read).
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Hold, PAUSE_AFTER_BYTES } from '../../../src/wire/hold.js';
import { Intake } from '../../../src/wire/intake.js';

function setup() {
  const calls: string[] = [];
  const client = { destroyed: false, pause: () => calls.push('pause'), resume: () => calls.push('resume') } as unknown as Socket;
  const hold = new Hold(new Intake(client), {
    replay: (code, frame) => calls.push(`replay ${String.fromCharCode(code)} ${frame.length}`),
    failed: (err) => calls.push(`failed ${String(err)}`),
    fatal: (err) => calls.push(`fatal ${String(err)}`),
    replayed: () => calls.push('replayed'),
    resumed: () => calls.push('resumed'),
    finished: () => false,
  });
  return { calls, hold };
}

const Q = 'Q'.charCodeAt(0);

describe('Hold', () => {
  it('replays the frame it was held for first, then those that came meanwhile, without pausing a client that sent little', async () => {
    const { calls, hold } = setup();
    let go!: () => void;
    hold.until(new Promise<void>((r) => (go = r)), { code: Q, frame: Buffer.alloc(10) });
    hold.push(Q, Buffer.alloc(20));
    expect(hold.held).toBe(true);
    go();
    await hold.current;
    expect(calls).toEqual(['replay Q 10', 'replay Q 20', 'replayed', 'resumed']);
    expect(hold.held).toBe(false);
  });

  it('pauses the client once the frames held pass the limit, and resumes it when they are replayed', async () => {
    const { calls, hold } = setup();
    let go!: () => void;
    hold.until(new Promise<void>((r) => (go = r)));
    hold.push(Q, Buffer.alloc(PAUSE_AFTER_BYTES / 2));
    expect(calls).toEqual([]);
    hold.push(Q, Buffer.alloc(PAUSE_AFTER_BYTES / 2 + 1));
    hold.push(Q, Buffer.alloc(1));
    expect(calls).toEqual(['pause']);
    go();
    await hold.current;
    expect(calls.slice(-3)).toEqual(['replayed', 'resume', 'resumed']);
  });

  it('pauses at once when asked (a wait for room to read more), and a frame the work could not handle goes first', async () => {
    const { calls, hold } = setup();
    let go!: () => void;
    const work = new Promise<void>((r) => (go = r)).then(() => hold.first(Q, Buffer.alloc(5)));
    hold.until(work, undefined, true);
    hold.push(Q, Buffer.alloc(7));
    expect(calls).toEqual(['pause']);
    go();
    await hold.current;
    expect(calls).toEqual(['pause', 'replay Q 5', 'replay Q 7', 'replayed', 'resume', 'resumed']);
  });

  it('a failed wait is told to the host, and the stream goes on', async () => {
    const { calls, hold } = setup();
    hold.until(Promise.reject(new Error('no backend')), { code: Q, frame: Buffer.alloc(3) });
    await hold.current;
    expect(calls).toEqual(['failed Error: no backend', 'replay Q 3', 'replayed', 'resumed']);
  });

  it('a wait of begin/end holds and replays like one of until, with no promise unless the large-message gate asks for one', async () => {
    const { calls, hold } = setup();
    hold.begin();
    hold.push(Q, Buffer.alloc(4));
    expect(hold.held).toBe(true);
    const asked = hold.current; // the gate waits on the work: a promise made only now
    expect(asked).toBeInstanceOf(Promise);
    hold.first(Q, Buffer.alloc(2));
    hold.end();
    await asked; // settled with the wait
    expect(calls).toEqual(['replay Q 2', 'replay Q 4', 'replayed', 'resumed']);
    expect(hold.held).toBe(false);
    expect(hold.current).toBeUndefined();
  });

  it('a failed begin/end wait is told to the host; a replay that throws ends the session', () => {
    const { calls, hold } = setup();
    hold.begin();
    hold.push(Q, Buffer.alloc(1));
    hold.end(new Error('53300'));
    expect(calls).toEqual(['failed Error: 53300', 'replay Q 1', 'replayed', 'resumed']);

    const broken = new Hold(new Intake({ destroyed: false, pause: () => undefined, resume: () => undefined } as unknown as Socket), {
      replay: () => {
        throw new Error('bad frame');
      },
      failed: () => undefined,
      fatal: (err) => calls.push(`fatal ${String(err)}`),
      replayed: () => undefined,
      resumed: () => undefined,
      finished: () => false,
    });
    broken.begin();
    broken.push(Q, Buffer.alloc(1));
    broken.end();
    expect(calls.at(-1)).toBe('fatal Error: bad frame');
  });
});
