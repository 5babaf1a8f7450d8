import { isUnfinished, type Job } from '../../api/types';
import { DependenciesSection } from './DependenciesSection';
import { FlowSections } from './FlowSections';

/** The job page's workflow part (API.md v1.2 "Workflows"): dependencies, dependents, the flow. Nothing for a job outside flows. */
export function JobFlow({ job }: { job: Job }) {
  const flowId = job.flowId;
  if (flowId === null || flowId === undefined) return null;
  return (
    <>
      <DependenciesSection jobId={job.id} flowId={flowId} unfinished={isUnfinished(job.status)} />
      <FlowSections job={{ ...job, flowId }} />
    </>
  );
}
