import { z } from 'zod';

export const text = (max: number) => z.string().trim().min(1).max(max);
export const entityId = z.string().trim().min(1).max(64);

/** Trimmed and lowercased before it is checked; `whenMissing` is the message when it is required and absent. */
export const emailOf = (whenMissing?: string) =>
  z
    .string(whenMissing ? { error: (issue) => (issue.input === undefined ? whenMissing : undefined) } : undefined)
    .trim()
    .toLowerCase()
    .max(254)
    .pipe(z.email('must be an email address'))
    // What z.email() accepts, said in the document (spaces around it are trimmed first). No `format: email`: that
    // format allows addresses z.email() refuses (quoted local parts, `}` or `?` in them).
    .meta({
      description: 'An email address',
      pattern: `^ *(?:${z.regexes.email.source.replace(/^\^|\$$/g, '')}) *$`,
    });
export const emailInput = emailOf();
/** Any common notation; the service normalises it to E.164 (without a country code: the account's region). */
export const phoneInput = z
  .string()
  .trim()
  .min(3)
  .max(40)
  // Not a JSON Schema format: it says a number of a numbering plan is expected, not any string of that length.
  .meta({ format: 'phone', description: 'Any common notation of a number that exists; stored in E.164' });
export const tagsInput = z.array(text(50)).max(50);

export const propertyInterestInput = z.strictObject({
  listingId: entityId,
  note: z.string().trim().max(1000).optional(),
});

/** The fields of a lead as captured: the capture body, and a routing preview of a lead not yet captured. */
export const leadCaptureShape = {
  name: text(200),
  email: emailInput.optional(),
  phone: phoneInput.optional(),
  source: text(100)
    .optional()
    .describe(
      'Free text such as "Zillow" or "Open house"; stored as a lowercase slug (`zillow`, `open-house`). Default `unknown`',
    ),
  message: z
    .string()
    .trim()
    .max(5000)
    .optional()
    .describe('What the person asked; becomes the summary of the inquiry on the timeline'),
  propertyInterests: z.array(propertyInterestInput).max(20).optional(),
  tags: tagsInput.optional(),
  autoRoute: z
    .boolean()
    .optional()
    .describe('Route the lead to an agent right away (a duplicate already assigned keeps its agent)'),
};
