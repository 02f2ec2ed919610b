// Flow control from the backend back to the client: the client is read only while its backend's
// socket holds no more than the high-water mark, and while nothing else stops it.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Intake, Stop, UPSTREAM_HIGH_WATER } from '../../../src/wire/intake.js';

function fakeClient() {
  const calls: string[] = [];
  const client = { destroyed: false, pause: () => calls.push('pause'), resume: () => calls.push('resume') } as unknown as Socket;
  return { calls, client };
}

/** A backend socket whose write buffer holds `writableLength` bytes. */
function fakeUpstream(writableLength: number) {
  return Object.assign(new EventEmitter(), { writableLength }) as unknown as Socket & { writableLength: number };
}

describe('Intake', () => {
  it('keeps reading while the backend holds no more than the high-water mark', () => {
    const { calls, client } = fakeClient();
    const intake = new Intake(client);
    intake.check(fakeUpstream(UPSTREAM_HIGH_WATER));
    intake.check(undefined);
    expect(calls).toEqual([]);
    expect(intake.stopped).toBe(false);
  });

  it('stops reading past it, and reads again once the backend has taken everything', () => {
    const { calls, client } = fakeClient();
    const intake = new Intake(client);
    const upstream = fakeUpstream(UPSTREAM_HIGH_WATER + 1);
    intake.check(upstream);
    intake.check(upstream); // one wait at a time
    expect(calls).toEqual(['pause']);
    upstream.emit('drain');
    expect(calls).toEqual(['pause', 'resume']);
    expect(upstream.listenerCount('drain') + upstream.listenerCount('close')).toBe(0);
  });

  it('reads again when the backend closes instead of draining', () => {
    const { calls, client } = fakeClient();
    const intake = new Intake(client);
    const upstream = fakeUpstream(UPSTREAM_HIGH_WATER * 2);
    intake.check(upstream);
    upstream.emit('close');
    expect(calls).toEqual(['pause', 'resume']);
    expect(upstream.listenerCount('drain')).toBe(0);
  });

  it('reads again only when no reason to stop is left', () => {
    const { calls, client } = fakeClient();
    const intake = new Intake(client);
    const upstream = fakeUpstream(UPSTREAM_HIGH_WATER * 2);
    intake.stop(Stop.Hold);
    intake.check(upstream);
    upstream.emit('drain');
    expect(intake.stopped).toBe(true);
    intake.go(Stop.Hold);
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('stops waiting on the backend when the client leaves', () => {
    const { client } = fakeClient();
    const intake = new Intake(client);
    const upstream = fakeUpstream(UPSTREAM_HIGH_WATER * 2);
    intake.check(upstream);
    intake.close();
    expect(upstream.listenerCount('drain') + upstream.listenerCount('close')).toBe(0);
  });
});
