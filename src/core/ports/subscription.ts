/** A live subscription (pub/sub): {@link close} ends it and its connection. */
export interface Subscription {
  close(): void;
}
