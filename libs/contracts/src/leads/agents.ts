import { z } from 'zod';
import { mergePatchOf, page, pageQuery, single } from '../common';
import { emailInput, phoneInput, text } from './common';
import { examples } from '../examples';

const booleanQuery = z.enum(['true', 'false']).transform((v) => v === 'true');

export const agentInput = z.strictObject({
  name: text(200),
  email: emailInput,
  phone: phoneInput.optional(),
  active: z.boolean().default(true).describe('Inactive agents are never routed to'),
  capacity: z
    .number()
    .int()
    .min(0)
    .max(1000)
    .default(25)
    .describe('The most open leads the agent may hold; routing skips an agent at capacity'),
  areas: z
    .array(text(100))
    .max(500)
    .default([])
    .describe('Postal codes or cities the agent covers (used by rules without agentIds)'),
});
export const agentCreate = agentInput.meta({ id: 'AgentCreate', examples: [examples.agentCreate] });
export type AgentCreate = z.infer<typeof agentCreate>;
export const agentPatch = mergePatchOf(agentInput).meta({ id: 'AgentPatch', examples: [examples.agentPatch] });
export type AgentPatch = z.infer<typeof agentPatch>;

export const agent = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    phone: z.string().nullable(),
    active: z.boolean(),
    capacity: z.number().int(),
    areas: z.array(z.string()),
    openLeads: z.number().int().describe('Open leads assigned to the agent now (live; not part of `version`)'),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Agent' });
export type Agent = z.infer<typeof agent>;

export const agentListQuery = z.strictObject({ ...pageQuery, active: single(booleanQuery.optional()) });
export type AgentListQuery = z.infer<typeof agentListQuery>;
export const agentPage = page(agent).meta({ id: 'AgentPage' });
