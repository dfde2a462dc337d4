import { z } from 'zod';

/**
 * The closed list of machine-readable error codes and the HTTP status each maps to.
 * This table is the only place a code meets a status.
 */
export const errorStatus = {
  malformed_request: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  account_not_found: 404,
  api_key_not_found: 404,
  listing_not_found: 404,
  job_not_found: 404,
  media_not_found: 404,
  lead_not_found: 404,
  agent_not_found: 404,
  rule_not_found: 404,
  webhook_not_found: 404,
  delivery_not_found: 404,
  feed_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  listing_exists: 409,
  lead_exists: 409,
  idempotency_in_progress: 409,
  media_limit_reached: 409,
  no_agent_available: 409,
  webhook_limit_reached: 409,
  last_admin_key: 409,
  feed_run_in_progress: 409,
  feed_disabled: 409,
  version_mismatch: 412,
  request_timeout: 408,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  validation_failed: 422,
  idempotency_key_reused: 422,
  bulk_limit_exceeded: 422,
  invalid_transition: 422,
  image_corrupt: 422,
  image_too_large: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
  dependency_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;
export const errorCodes = Object.keys(errorStatus) as [ErrorCode, ...ErrorCode[]];

export const errorTitles: Record<ErrorCode, string> = {
  malformed_request: 'Malformed request',
  invalid_cursor: 'Invalid cursor',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  account_not_found: 'Account not found',
  api_key_not_found: 'API key not found',
  listing_not_found: 'Listing not found',
  job_not_found: 'Job not found',
  media_not_found: 'Media not found',
  lead_not_found: 'Lead not found',
  agent_not_found: 'Agent not found',
  rule_not_found: 'Routing rule not found',
  webhook_not_found: 'Webhook endpoint not found',
  delivery_not_found: 'Webhook delivery not found',
  feed_not_found: 'Feed not found',
  feed_run_in_progress: 'A run of this feed is in progress',
  feed_disabled: 'The feed is disabled',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  last_admin_key: 'The last admin key',
  listing_exists: 'Listing already exists',
  lead_exists: 'Lead already exists',
  idempotency_in_progress: 'Request with this Idempotency-Key is still in progress',
  media_limit_reached: 'Media limit reached',
  no_agent_available: 'No agent available',
  webhook_limit_reached: 'Webhook endpoint limit reached',
  version_mismatch: 'Version mismatch',
  request_timeout: 'Request timeout',
  payload_too_large: 'Payload too large',
  uri_too_long: 'URI too long',
  unsupported_media_type: 'Unsupported media type',
  validation_failed: 'Validation failed',
  idempotency_key_reused: 'Idempotency-Key reused with a different request',
  bulk_limit_exceeded: 'Bulk limit exceeded',
  invalid_transition: 'Invalid status transition',
  image_corrupt: 'Image cannot be read',
  image_too_large: 'Image has too many pixels',
  rate_limited: 'Too many requests',
  headers_too_large: 'Request header fields too large',
  internal_error: 'Internal server error',
  bad_gateway: 'Bad gateway',
  service_unavailable: 'Service unavailable',
  dependency_unavailable: 'A service this request needs is unavailable',
};

export const fieldError = z.object({
  path: z.string().describe('Dotted path of the offending field, e.g. `pricing.listPrice` or `listings.3.status`'),
  message: z.string(),
});
export type FieldError = z.infer<typeof fieldError>;

/** RFC 9457 problem details, extended with a stable `code` and the request id. */
export const problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(errorCodes),
    requestId: z.string(),
    errors: z.array(fieldError).optional(),
  })
  .catchall(z.unknown())
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof problem>;
