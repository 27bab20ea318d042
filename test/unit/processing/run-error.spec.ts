import { lettaRunError, runFailure } from '../../../src/processing/run-error';
import type { StopReason } from '../../../src/core/loop/stop-reason';

/** What a failed run answers a waiting caller, by how it stopped. */
describe('runFailure', () => {
  const run = (
    stop_reason: StopReason,
    error: string | null,
    error_type: string | null = null,
  ) => ({
    id: 'run-1',
    stop_reason,
    error,
    error_type,
  });

  it.each([
    [
      'a provider that refused the request',
      run('llm_api_error', 'bad', 'llm_bad_request'),
      'bad_request',
      'LLM_BAD_REQUEST',
    ],
    ['a provider that failed', run('llm_api_error', 'boom'), 'bad_gateway', 'LLM_ERROR'],
    ['a bug of ours', run('error', 'TypeError: x'), 'internal', 'INTERNAL_ERROR'],
    // a shutdown or another instance taking the agent stopped it: unavailable, not broken
    ['an interrupted run', run('error', 'interrupted'), 'unavailable', 'INTERRUPTED'],
  ])('%s', (_name, r, kind, code) => {
    const e = runFailure(r)!;
    expect([e.kind, e.code, e.retry]).toEqual([kind, code, false]);
    expect(e.details).toMatchObject({ run_id: 'run-1', stop_reason: r.stop_reason });
  });

  it.each([['max_steps'], ['end_turn'], ['cancelled'], ['tool_rule_violation']] as [StopReason][])(
    '%s is an answer, not an error',
    (stop) => {
      expect(runFailure(run(stop, null))).toBeNull();
      expect(lettaRunError(run(stop, null))).toBeNull();
    },
  );
});
