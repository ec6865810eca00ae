/**
 * The source of the service's own (operational) events: they tell an owner of their own
 * subscription, need no policy check, and are never accepted from a producer.
 */
export const OPERATIONAL_SOURCE = '/svc-notifications';
