import { DeadLetterJobEntity } from './dead-letter-job.entity';
import { JobEventEntity } from './job-event.entity';
import { JobExecutionEntity } from './job-execution.entity';
import { JobLogEntity } from './job-log.entity';
import { JobEntity } from './job.entity';
import { ScheduleEntity } from './schedule.entity';
import { WorkerEntity } from './worker.entity';

export const POSTGRES_ENTITIES = [JobEntity, JobEventEntity, JobExecutionEntity, DeadLetterJobEntity, JobLogEntity, WorkerEntity, ScheduleEntity];
export { DeadLetterJobEntity, JobEventEntity, JobExecutionEntity, JobLogEntity, JobEntity, ScheduleEntity, WorkerEntity };
