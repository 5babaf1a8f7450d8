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
});
