import type {
  AgentToolSetup,
  ConsentCheck,
  ConsentCheckRequest,
  ConsentPort,
  ExecutionMeta,
  ExecutorSettings,
  PassState,
  ToolInvoker,
  ToolOutcome,
} from '../../../../src/core/executor/contracts';
import { InMemoryStateStore } from '../../../../src/core/executor/in-memory-state-store';
import { TimerPort, ToolExecutor } from '../../../../src/core/executor/tool-executor';
import type { ToolRule } from '../../../../src/core/rules/tool-rule';
import type { ToolDefinition, ToolSafety } from '../../../../src/core/tools/tool-definition';

export class FakeClock {
  constructor(public t = 1_700_000_000_000) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Timers that fire only when a test says so. */
export class ManualTimers implements TimerPort {
  private next = 1;
  readonly pending = new Map<number, () => void>();
  setTimeout(fn: () => void): unknown {
    const h = this.next++;
    this.pending.set(h, fn);
    return h;
  }
  clearTimeout(h: unknown): void {
    this.pending.delete(h as number);
  }
  fireAll(): void {
    for (const [h, fn] of [...this.pending]) {
      this.pending.delete(h);
      fn();
    }
  }
}

export const aTool = (
  name: string,
  safety: ToolSafety = 'read_only',
  parameters: Record<string, unknown> = { type: 'object' },
): ToolDefinition => ({
  name,
  description: `the ${name} tool`,
  parameters,
  safety,
  kind: 'builtin',
});

export const DEFAULT_SETTINGS: ExecutorSettings = {
  toolTimeoutMs: 120_000,
  consentTimeoutMs: 300_000,
  dedupeWindowMs: 300_000,
};

export function aSetup(
  rules: ToolRule[] = [],
  tools: ToolDefinition[] = ['a', 'b', 'c', 'd', 'e'].map((n) => aTool(n)),
  settings: Partial<ExecutorSettings> = {},
): AgentToolSetup {
  return {
    tenantId: 'default',
    agentId: 'agent-1',
    tools,
    rules,
    settings: { ...DEFAULT_SETTINGS, ...settings },
  };
}

/** Records every invocation; a tool answers `<name> ok` unless told otherwise. */
export class RecordingInvoker implements ToolInvoker {
  readonly calls: { name: string; args: Record<string, unknown>; at: number }[] = [];
  readonly failing = new Set<string>();
  readonly outputs = new Map<string, string>();
  readonly hanging = new Set<string>();
  constructor(private readonly clock: FakeClock) {}
  invoke(
    tool: ToolDefinition,
    args: Record<string, unknown>,
  ): Promise<{ status: 'success' | 'error'; value: string }> {
    this.calls.push({ name: tool.name, args, at: this.clock.now() });
    if (this.hanging.has(tool.name)) return new Promise(() => undefined);
    if (this.failing.has(tool.name))
      return Promise.resolve({ status: 'error', value: `${tool.name} failed` });
    return Promise.resolve({
      status: 'success',
      value: this.outputs.get(tool.name) ?? `${tool.name} ok`,
    });
  }
}

export class ScriptedConsent implements ConsentPort {
  readonly requests: ConsentCheckRequest[] = [];
  answer: (req: ConsentCheckRequest) => ConsentCheck = () => ({
    kind: 'granted',
    grantId: 'grant-1',
  });
  check(req: ConsentCheckRequest): Promise<ConsentCheck> {
    this.requests.push(req);
    return Promise.resolve(this.answer(req));
  }
}

/** One agent, one store, a fake clock; `restart()` builds a new executor on the same store. */
export class Harness {
  readonly clock = new FakeClock();
  readonly store = new InMemoryStateStore();
  readonly invoker = new RecordingInvoker(this.clock);
  readonly consent = new ScriptedConsent();
  readonly timers = new ManualTimers();
  executor!: ToolExecutor;
  pass!: PassState;
  batchId = 'batch-1';
  private batches = 1;
  private callIds = 0;

  constructor(public setup: AgentToolSetup) {
    this.restart();
    this.pass = this.executor.newPass(setup, this.batchId);
  }

  restart(): void {
    this.executor = new ToolExecutor({
      clock: this.clock,
      store: this.store,
      invoker: this.invoker,
      consent: this.consent,
      limits: { batchTtlMs: 86_400_000 },
      timers: this.timers,
    });
  }

  meta(): ExecutionMeta {
    return {
      tenantId: 'default',
      agentId: this.setup.agentId,
      runId: 'run-1',
      batchId: this.batchId,
    };
  }

  heartbeat(): void {
    this.pass = this.executor.newPass(this.setup, this.batchId);
  }

  async newBatch(): Promise<void> {
    await this.executor.completeBatch(this.batchId);
    this.batchId = `batch-${++this.batches}`;
    this.pass = this.executor.newPass(this.setup, this.batchId);
  }

  call(
    name: string,
    args: Record<string, unknown> | string = {},
    toolCallId?: string,
  ): Promise<ToolOutcome> {
    return this.executor.execute(
      this.setup,
      this.pass,
      { toolCallId: toolCallId ?? `call-${++this.callIds}`, name, arguments: args },
      this.meta(),
    );
  }

  /**
   * Runs a script, one token per step, and returns one code per call:
   * `a` call a with {} · `a {"x":1}` with args · `a!` call a, which fails · `heartbeat` · `batch` (new batch)
   * · `+30s` advance the clock · `restart` (new executor, same store, same batch, new pass).
   * Codes: ok, err, cached, pending, Timeout, or the refusal's error type (RuleViolation, Deduplicated …).
   */
  async run(script: string[]): Promise<string> {
    const codes: string[] = [];
    for (const step of script) {
      if (step === 'heartbeat') this.heartbeat();
      else if (step === 'batch') await this.newBatch();
      else if (step === 'restart') {
        this.restart();
        this.heartbeat();
      } else if (/^\+\d+s$/.test(step)) this.clock.advance(Number(step.slice(1, -1)) * 1000);
      else {
        const m = /^(\w+)(!?)(?:\s+(.*))?$/.exec(step)!;
        if (m[2]) this.invoker.failing.add(m[1]);
        const out = await this.call(
          m[1],
          m[3] ? (JSON.parse(m[3]) as Record<string, unknown>) : {},
        );
        this.invoker.failing.delete(m[1]);
        codes.push(code(out));
      }
    }
    return codes.join(' ');
  }
}

export function code(o: ToolOutcome): string {
  switch (o.kind) {
    case 'executed':
      return o.status === 'success' ? 'ok' : 'err';
    case 'cached':
      return 'cached';
    case 'consent_required':
      return 'pending';
    case 'client_required':
      return 'client';
    case 'deferred':
      return 'held';
    case 'timeout':
      return 'Timeout';
    case 'refused':
      return o.error!.type;
  }
}
