import { DeadLetterJobEntity } from './dead-letter-job.entity';
import { JobDependencyEntity } from './job-dependency.entity';
import { JobEventEntity } from './job-event.entity';
import { JobExecutionEntity } from './job-execution.entity';
import { JobLogEntity } from './job-log.entity';
import { JobEntity } from './job.entity';
import { ScheduleEntity } from './schedule.entity';
import { WorkerEntity } from './worker.entity';

export const POSTGRES_ENTITIES = [JobEntity, JobEventEntity, JobExecutionEntity, DeadLetterJobEntity, JobLogEntity, WorkerEntity, ScheduleEntity, JobDependencyEntity];
export { DeadLetterJobEntity, JobDependencyEntity, JobEventEntity, JobExecutionEntity, JobLogEntity, JobEntity, ScheduleEntity, WorkerEntity };
