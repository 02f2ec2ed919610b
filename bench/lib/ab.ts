/**
 * The report of an `--against` run: this build against the other one, target by target, as the
 * ratio this / other of each round (both builds ran in the same round, one right after the other),
 * with the median and the spread of those ratios, and the goals that compare the two.
 */
import type { CitusResult } from '../scenarios/citus.js';
import { CLIENTS_REPOBASE, type ClientsResult } from '../scenarios/clients.js';
import type { RestResult } from '../scenarios/rest.js';
import { SCOPED_KEY, type WireResult } from '../scenarios/wire.js';
import { fmt, summarize, type Summary } from './stats.js';

/** The parts of a run an A/B compares: whatever ran of them. */
export interface AbInput {
  wire?: WireResult[] | undefined;
  wireOwnCores?: WireResult[] | undefined;
  rest?: RestResult['targets'] | undefined;
  /** The REST targets at one fixed rate (RestResult.atRate). */
  restAtRate?: RestResult['targets'] | undefined;
  restOwnCores?: RestResult['targets'] | undefined;
  citus?: CitusResult | undefined;
  /** Many clients on few backends. */
  clients?: ClientsResult | undefined;
}

export interface AbRow {
  scenario: string;
  /** The target's name in this build (the other's is the same with the ref's suffix). */
  target: string;
  measure: string;
  ours: Summary;
  theirs: Summary;
  /** this / other, one ratio per round. */
  ratio: Summary;
}

export interface AbGoal {
  name: string;
  target: string;
  ratio: number;
  passed: boolean;
}

/**
 * How far a median ratio of rounds may sit on the wrong side of 1 and still count as "not slower"
 * or "no more CPU": the same build measured against itself on this machine (an A/A run) gives
 * median ratios within this margin, so a goal of exactly 1.0 would fail a build half the time
 * for nothing. A real regression shows beyond it, and in every round.
 */
export const AB_MARGIN = 0.03;

/** Per-round ratios a/b (both lists in round order). */
function perRound(a: readonly number[], b: readonly number[]): Summary {
  return summarize(a.slice(0, b.length).map((x, i) => x / b[i]!));
}

const sumOf = (a: Summary, b: Summary): Summary => summarize(a.samples.map((x, i) => x + (b.samples[i] ?? NaN)));

function row(scenario: string, target: string, measure: string, ours: Summary | undefined, theirs: Summary | undefined): AbRow[] {
  if (!ours || !theirs) return [];
  return [{ scenario, target, measure, ours, theirs, ratio: perRound(ours.samples, theirs.samples) }];
}

function wireRows(results: WireResult[] | undefined, targets: readonly string[], suffix: string, label: string): AbRow[] {
  return (results ?? []).flatMap((w) =>
    targets.flatMap((t) => [
      ...row(`${label}${w.scenario}`, t, 'TPS', w.targets[t]?.tps, w.targets[t + suffix]?.tps),
      ...row(`${label}${w.scenario}`, t, 'CPU µs/transaction, service', w.targets[t]?.cpuUs, w.targets[t + suffix]?.cpuUs),
    ]),
  );
}

function restRows(results: RestResult['targets'] | undefined, targets: readonly string[], suffix: string, label: string): AbRow[] {
  if (!results) return [];
  return targets.flatMap((t) => {
    const [ours, theirs] = [results[t], results[t + suffix]];
    if (!ours || !theirs) return [];
    return [
      ...row(label, t, 'req/s', ours.rps, theirs.rps),
      ...row(label, t, 'CPU µs/request, service', ours.cpu.service, theirs.cpu.service),
      ...row(label, t, 'CPU µs/request, Postgres', ours.cpu.postgres, theirs.cpu.postgres),
      ...row(label, t, 'CPU µs/request, service + Postgres', sumOf(ours.cpu.service, ours.cpu.postgres), sumOf(theirs.cpu.service, theirs.cpu.postgres)),
    ];
  });
}

const AT_RATE = 'REST one-row select at a fixed rate';

/** The scoped key's target of this build against the other build's repobase (a full key, or a build before scoped keys). */
function scopedRows(results: WireResult[] | undefined, suffix: string): AbRow[] {
  return (results ?? []).flatMap((w) => [
    ...row(w.scenario, SCOPED_KEY, 'TPS', w.targets[SCOPED_KEY]?.tps, w.targets[`repobase${suffix}`]?.tps),
    ...row(w.scenario, SCOPED_KEY, 'CPU µs/transaction, service', w.targets[SCOPED_KEY]?.cpuUs, w.targets[`repobase${suffix}`]?.cpuUs),
  ]);
}

/** Every comparison the run allows. */
export function abRows(input: AbInput, suffix: string): AbRow[] {
  const shipped = ['repobase', 'repobase 1 process'];
  return [
    ...wireRows(input.wire, shipped, suffix, ''),
    ...scopedRows(input.wire, suffix),
    ...wireRows(input.wireOwnCores, ['repobase'], suffix, 'own cores: '),
    ...restRows(input.rest, shipped, suffix, 'REST one-row select'),
    ...restRows(input.restAtRate, shipped, suffix, AT_RATE),
    ...restRows(input.restOwnCores, ['repobase'], suffix, 'own cores: REST one-row select'),
    ...wireRows(input.clients?.results, [CLIENTS_REPOBASE], suffix, `${input.clients?.clients} clients: `),
    ...wireRows(input.citus?.wire, ['repobase on Citus'], suffix, 'Citus: '),
    ...restRows(input.citus?.rest, ['repobase on Citus'], suffix, 'Citus: REST one-row select'),
    ...restRows(input.citus?.restSettingFree, ['repobase on Citus'], suffix, 'Citus: REST SELECT 1 (setting-free)'),
  ];
}

/** The A/B table. */
export function abLines(rows: AbRow[], ref: { ref: string; sha: string }): string[] {
  if (rows.length === 0) return [`A/B against ${ref.ref}: no scenario that compares builds ran (wire, wire-own-cores, clients, rest, rest-own-cores, citus)`];
  const digits = (r: AbRow) => (r.measure.startsWith('CPU') ? 1 : 0);
  return [
    `A/B against ${ref.ref} (${ref.sha.slice(0, 12)}), both builds in the same rounds, each on an upstream of its own: this build / ${ref.ref}, the median of the rounds' ratios (min–max).`,
    '',
    `| scenario | target | measure | this build | ${ref.ref} | this / ${ref.ref} | rounds |`,
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.target} | ${r.measure} | ${fmt(r.ours.median, digits(r))} | ${fmt(r.theirs.median, digits(r))} | **${fmt(r.ratio.median, 2)}** (${fmt(r.ratio.min, 2)}–${fmt(r.ratio.max, 2)}) | ${r.ratio.samples.length} |`,
    ),
  ];
}

/**
 * The goals of an A/B: REST not slower, and no more CPU per request (the service's and Postgres'),
 * than the other build, as shipped and as one process — saturated, and at the fixed rate where
 * both builds serve the same load; "not measured" when REST did not run.
 */
export function abGoals(rows: AbRow[], ref: string): AbGoal[] {
  const find = (scenario: string, target: string, measure: string) => rows.find((r) => r.scenario === scenario && r.target === target && r.measure === measure)?.ratio.median ?? NaN;
  const cpuGoal = (name: string, cpu: number): AbGoal => ({ name, target: `≤ ${fmt(1 + AB_MARGIN, 2)}`, ratio: cpu, passed: cpu <= 1 + AB_MARGIN });
  // A scoped key's session costs no more than a full key's did (DESIGN.md §10): per wire scenario.
  const scoped = rows
    .filter((r) => r.target === SCOPED_KEY && r.measure === 'CPU µs/transaction, service')
    .map((r) => cpuGoal(`A/B wire ${r.scenario}: scoped key's CPU µs per transaction vs ${ref}'s repobase`, r.ratio.median));
  const rest = [
    ['as shipped', 'repobase'],
    ['1 process', 'repobase 1 process'],
  ].flatMap(([label, target]) => {
    const rps = find('REST one-row select', target!, 'req/s');
    return [
      { name: `A/B ${label}: REST req/s vs ${ref}`, target: `≥ ${fmt(1 - AB_MARGIN, 2)}`, ratio: rps, passed: rps >= 1 - AB_MARGIN },
      cpuGoal(`A/B ${label}: REST CPU µs per request (service + Postgres) vs ${ref}`, find('REST one-row select', target!, 'CPU µs/request, service + Postgres')),
      cpuGoal(`A/B ${label}: REST CPU µs per request at a fixed rate (service + Postgres) vs ${ref}`, find(AT_RATE, target!, 'CPU µs/request, service + Postgres')),
    ];
  });
  return [...scoped, ...rest];
}
