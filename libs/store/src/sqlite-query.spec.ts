import { limitSql } from './sqlite-query';

describe('limitSql', () => {
  it('writes a whole count into the clause, -1 for no limit', () => {
    expect(limitSql(20)).toBe('LIMIT 20');
    expect(limitSql(0)).toBe('LIMIT 0');
    expect(limitSql(-1)).toBe('LIMIT -1');
  });

  it('refuses anything that is not a whole count, so nothing but digits reaches the SQL', () => {
    for (const bad of [
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      -2,
      2 ** 53,
      '5; DROP TABLE x' as unknown as number,
    ]) {
      expect(() => limitSql(bad)).toThrow(RangeError);
    }
  });
});
