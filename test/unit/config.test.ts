import { describe, expect, it } from 'vitest';
import { configKeys, loadConfig } from '../../src/shared/config.js';
import { configKeyNames, envName, flagName } from '../../src/shared/config-keys.js';

describe('configuration', () => {
  it('names every key of the schema in config/default.json, where the CLI reads the flags it accepts', () => {
    expect([...configKeyNames()].sort()).toEqual([...configKeys].sort());
  });

  it('takes config/default.json, then the environment, then flags', () => {
    const defaults = loadConfig({}, {});
    expect(defaults.httpPort).toBe(8080);
    expect(defaults.pgPort).toBe(5433);
    expect(defaults.embeddedPgPort).toBe(25432);
    expect(defaults.host).toBe('127.0.0.1');
    expect(defaults.logLevel).toBe('info');
    expect(loadConfig({ REPOBASE_HTTP_PORT: '9000' }, {}).httpPort).toBe(9000);
    expect(loadConfig({ REPOBASE_HTTP_PORT: '9000' }, { httpPort: '9100' }).httpPort).toBe(9100);
    expect(loadConfig({ REPOBASE_LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
  });

  it('is frozen', () => {
    const c = loadConfig({}, {});
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('names the key, where it came from and the allowed values when a value is bad', () => {
    expect(() => loadConfig({ REPOBASE_LOG_LEVEL: 'loud' })).toThrow(
      'invalid configuration REPOBASE_LOG_LEVEL: "loud"; expected one of fatal, error, warn, info, debug, trace, silent',
    );
    expect(() => loadConfig({ REPOBASE_HTTP_PORT: 'eighty' })).toThrow('invalid configuration REPOBASE_HTTP_PORT: "eighty"; expected an integer from 0 to 65535');
    expect(() => loadConfig({}, { pgPort: '70000' })).toThrow('invalid configuration --pg-port: 70000; expected an integer from 0 to 65535');
    expect(() => loadConfig({}, {}, { httpPort: 'x' })).toThrow('invalid configuration "dataDir" in config/default.json: missing; expected a non-empty string');
    expect(() => loadConfig({}, {}, { nope: 1 })).toThrow('unknown configuration key "nope"');
  });

  it('maps keys to environment variables and flags', () => {
    expect(envName('embeddedPgPort')).toBe('REPOBASE_EMBEDDED_PG_PORT');
    expect(envName('upstreamUrl')).toBe('REPOBASE_UPSTREAM_URL');
    expect(flagName('dataDir')).toBe('data-dir');
  });
});
