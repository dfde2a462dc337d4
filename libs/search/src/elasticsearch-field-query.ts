import type { estypes } from '@elastic/elasticsearch';
import type { Listing } from '@estate/contracts/listings';
import { propertyIndexRecord, type FieldFilter, type IndexValue } from '@estate/reso';
import { distinct, INDEXED_FIELDS, indexedField } from './field-query';
import type { FieldQuery, FieldQueryResult } from './listing-index';

/**
 * The RESO field query on Elasticsearch (semantics in field-query.ts): a `reso` object in each listing document
 * with the indexed Data Dictionary fields, collections with their distinct-value count beside them (`<name>__n`, what
 * `all` needs). Pure: no I/O here.
 */

const COUNT_SUFFIX = '__n';
const path = (name: string): string => `reso.${indexedField(name).name}`;

export const resoMappings: estypes.MappingProperty = {
  type: 'object',
  properties: Object.fromEntries(
    [...INDEXED_FIELDS.values()].flatMap((f): Array<[string, estypes.MappingProperty]> => {
      const type: estypes.MappingProperty =
        f.kind === 'number'
          ? { type: 'double' }
          : f.kind === 'timestamp'
            ? { type: 'long' }
            : f.kind === 'boolean'
              ? { type: 'boolean' }
              : f.kind === 'date'
                ? { type: 'date', format: 'strict_date' }
                : { type: 'keyword' };
      return f.collection
        ? [
            [f.name, type],
            [`${f.name}${COUNT_SUFFIX}`, { type: 'integer' }],
          ]
        : [[f.name, type]];
    }),
  ),
};

/** The `reso` object of a listing's document. */
export function resoDocument(listing: Listing): Record<string, unknown> {
  const record = propertyIndexRecord(listing);
  const out: Record<string, unknown> = {};
  for (const f of INDEXED_FIELDS.values()) {
    const value = record[f.name];
    if (f.collection) {
      const values = distinct((value as string[]) ?? []);
      out[f.name] = values;
      out[`${f.name}${COUNT_SUFFIX}`] = values.length;
    } else if (value !== null) out[f.name] = value;
  }
  return out;
}

const escapeWildcard = (text: string): string => text.replace(/[\\*?]/g, (c) => `\\${c}`);
const NONE: estypes.QueryDslQueryContainer = { match_none: {} };
const ALL: estypes.QueryDslQueryContainer = { match_all: {} };

export function fieldQuery(filter: FieldFilter): estypes.QueryDslQueryContainer {
  switch (filter.kind) {
    case 'and':
      return { bool: { filter: filter.of.map(fieldQuery) } };
    case 'or':
      return { bool: { should: filter.of.map(fieldQuery), minimum_should_match: 1 } };
    case 'not':
      // Documents the inner query does not match, a missing value included: not(false) is true.
      return { bool: { must_not: [fieldQuery(filter.of)] } };
    case 'const':
      return filter.value ? ALL : NONE;
    case 'compare': {
      const field = path(filter.field);
      if (filter.value === null) {
        const exists = { exists: { field } };
        return filter.op === 'eq' ? { bool: { must_not: [exists] } } : filter.op === 'ne' ? exists : NONE;
      }
      if (filter.op === 'eq') return { term: { [field]: filter.value } };
      if (filter.op === 'ne') return { bool: { must_not: [{ term: { [field]: filter.value } }] } };
      return {
        range: { [field]: { [filter.op === 'ge' ? 'gte' : filter.op === 'le' ? 'lte' : filter.op]: filter.value } },
      };
    }
    case 'in':
      return { terms: { [path(filter.field)]: filter.values as Array<string | number | boolean> } };
    case 'text': {
      const field = path(filter.field);
      if (filter.value === '') return { exists: { field } };
      if (filter.fn === 'startswith') return { prefix: { [field]: { value: filter.value } } };
      const value = escapeWildcard(filter.value);
      return { wildcard: { [field]: { value: filter.fn === 'contains' ? `*${value}*` : `*${value}` } } };
    }
    case 'any':
      return filter.values
        ? { terms: { [path(filter.field)]: filter.values } }
        : { exists: { field: path(filter.field) } };
    case 'all': {
      const field = path(filter.field);
      // Every value of the document among the given ones: as many of them match as the document holds.
      return {
        bool: {
          should: [
            { term: { [`${field}${COUNT_SUFFIX}`]: 0 } },
            {
              terms_set: {
                [field]: { terms: distinct(filter.values), minimum_should_match_field: `${field}${COUNT_SUFFIX}` },
              },
            },
          ],
          minimum_should_match: 1,
        },
      };
    }
    case 'tuple': {
      // (a, b) > (x, y)  ==  a > x  or  (a = x and b > y)
      const alternatives = filter.fields.map((name, i): estypes.QueryDslQueryContainer => {
        const equal = filter.fields
          .slice(0, i)
          .map((f, j) => ({ term: { [path(f)]: filter.values[j] as string | number } }));
        const beyond = { range: { [path(name)]: { [filter.op]: filter.values[i] as string | number } } };
        return equal.length === 0 ? beyond : { bool: { filter: [...equal, beyond] } };
      });
      return { bool: { should: alternatives, minimum_should_match: 1 } };
    }
  }
}

export function fieldSearchRequest(query: FieldQuery): estypes.SearchRequest {
  return {
    from: query.skip,
    size: query.limit,
    track_total_hits: query.count,
    query: {
      bool: { filter: [{ term: { accountId: query.accountId } }, ...(query.where ? [fieldQuery(query.where)] : [])] },
    },
    sort: query.order.map(({ field, direction }) => ({ [path(field)]: { order: direction, missing: '_last' } })),
    _source: ['listing'],
  };
}

export function fieldSearchResult(
  query: FieldQuery,
  response: estypes.SearchResponse<{ listing: Listing }>,
): FieldQueryResult {
  const total = response.hits.total;
  return {
    items: response.hits.hits.map((h) => h._source!.listing),
    ...(query.count ? { total: typeof total === 'number' ? total : (total?.value ?? 0) } : {}),
  };
}

export type { IndexValue };
