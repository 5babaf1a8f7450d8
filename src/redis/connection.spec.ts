import { loadConfig } from '../config/config';
import { describeRedis, reconnectOnReadonly } from './connection';

describe('describeRedis: where Redis is, for error messages', () => {
  it('never shows a password, the data nodes\' or the Sentinels\'', () => {
    expect(describeRedis(loadConfig({ REDIS_URL: 'redis://app:s3cret@h:6379/2' }))).toBe('REDIS_URL=redis://app:***@h:6379/2');
    const sentinel = describeRedis(loadConfig({ REDIS_URL: 'redis://:s3cret@h/1', REDIS_SENTINELS: 'a:26379,b:26380', REDIS_SENTINEL_PASSWORD: 'other-s3cret' }));
    expect(sentinel).toBe('REDIS_SENTINELS=a:26379,b:26380, master "mymaster"');
    expect(describeRedis(loadConfig({ REDIS_CLUSTER_NODES: 'a:1,b:2' }))).toBe('REDIS_CLUSTER_NODES=a:1,b:2');
  });
});

describe('reconnectOnReadonly', () => {
  it('reconnects and resends on READONLY and UNBLOCKED only', () => {
    expect(reconnectOnReadonly(new Error("READONLY You can't write against a read only replica."))).toBe(2);
    expect(reconnectOnReadonly(new Error("READONLY You can't write against a read only replica. script: 41d0, on @user_script:1."))).toBe(2);
    expect(reconnectOnReadonly(new Error('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'))).toBe(2);
    for (const m of ['ERR unknown command', 'NOSCRIPT No matching script', 'ERR Error running script: job text READONLY', 'LOADING Redis is loading']) {
      expect(reconnectOnReadonly(new Error(m))).toBe(false);
    }
  });
});
