import { Registry } from 'prom-client';
import { JobMetrics, UNREGISTERED_TYPE } from './job-metrics';

describe('JobMetrics', () => {
  it('labels attempts by queue and type; a type without a handler shares one label value', async () => {
    const registry = new Registry();
    const m = new JobMetrics(registry, (t) => t === 'send_email');
    m.jobStarted('mail', 'send_email', 20);
    m.jobFinished('mail', 'send_email', 'completed', 5);
    m.jobStarted('mail', 'typo-1', 1);
    m.jobFinished('mail', 'typo-1', 'failed', 1);
    m.jobStarted('mail', 'typo-2', 1);
    m.jobFinished('mail', 'typo-2', 'released', 1);
    const text = await registry.metrics();
    expect(text).toContain('sluice_jobs_started_total{project="default",queue="mail",type="send_email"} 1');
    expect(text).toContain('sluice_jobs_completed_total{project="default",queue="mail",type="send_email"} 1');
    expect(text).toContain(`sluice_jobs_started_total{project="default",queue="mail",type="${UNREGISTERED_TYPE}"} 2`);
    expect(text).toContain(`sluice_jobs_failed_total{project="default",queue="mail",type="${UNREGISTERED_TYPE}",reason="error"} 1`);
    expect(text).toContain(`sluice_jobs_interrupted_total{project="default",queue="mail",type="${UNREGISTERED_TYPE}",reason="released"} 1`);
    expect(text).toContain('sluice_job_wait_seconds_count{project="default",queue="mail",type="send_email"} 1');
    expect(text).toContain('sluice_job_processing_seconds_count{project="default",queue="mail",type="send_email",outcome="completed"} 1');
    expect(text).not.toMatch(/typo-/);
  });

  it('counts held between reads are added once, by whichever counter is read first', async () => {
    const registry = new Registry();
    const m = new JobMetrics(registry, () => true);
    const line = async (name: string) => (await registry.metrics()).split('\n').find((l) => l.startsWith(`${name}{project="default",queue="q",type="t"}`));
    expect(await line('sluice_jobs_started_total')).toBeUndefined(); // no series before the first job
    for (let i = 0; i < 3; i++) m.jobStarted('q', 't', 1);
    m.jobFinished('q', 't', 'completed', 1);
    expect(await line('sluice_jobs_started_total')).toMatch(/ 3$/);
    expect(await line('sluice_jobs_completed_total')).toMatch(/ 1$/);
    expect(await line('sluice_jobs_started_total')).toMatch(/ 3$/); // read again: nothing added twice
    m.jobStarted('q', 't', 1);
    m.jobFinished('q', 't', 'completed', 1);
    const completed = registry.getSingleMetric('sluice_jobs_completed_total')!;
    expect((await completed.get()).values).toEqual([{ labels: { project: 'default', queue: 'q', type: 't' }, value: 2 }]);
    expect(await line('sluice_jobs_started_total')).toMatch(/ 4$/);
  });
});
