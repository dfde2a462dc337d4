import { emailKey, fold, searchTerms, searchTokens, slugify, toE164 } from './contact.rules';

describe('contact normalisation', () => {
  it('writes phones in E.164, reading national numbers in the default region', () => {
    for (const raw of ['(512) 555-0100', '+1 512-555-0100', '512.555.0100', '1-512-555-0100', '+1 (512) 5550100']) {
      expect(toE164(raw)).toBe('+15125550100');
    }
    expect(toE164('+44 20 7946 0958')).toBe('+442079460958');
    expect(toE164('020 7946 0958', 'GB')).toBe('+442079460958');
    expect(toE164('12')).toBeNull();
    expect(toE164('not a phone')).toBeNull();
  });

  it('makes sources slugs and folds accents', () => {
    expect(slugify('  Open House! ')).toBe('open-house');
    expect(slugify('Realtor.com')).toBe('realtor-com');
    expect(slugify('Référence')).toBe('reference');
    expect(slugify('!!!')).toBe('unknown');
    expect(fold('JOSÉ Müller')).toBe('jose muller');
    expect(emailKey('acc_1', 'a@b.co')).toBe('acc_1|a@b.co');
  });
});

describe('search tokens', () => {
  const tokens = searchTokens({ name: "José  O'Brien-Smith", email: 'jose.obrien@example.com', phone: '+15125550100' });
  const finds = (q: string) => searchTerms(q).every((forms) => forms.some((f) => tokens.includes(f)));

  it('finds a lead by the start of any word of its name, email or phone', () => {
    for (const q of [
      'jo',
      'José',
      'jose',
      'obrien',
      "o'brien-smith",
      'jose.ob',
      'jose.obrien@example.com',
      'example',
      'exam',
      '512',
      '(512) 555',
      '+1 512',
      '555-0100',
      'Jose OBrien',
      'j',
    ]) {
      expect({ q, found: finds(q) }).toEqual({ q, found: true });
    }
  });

  it('does not find what only appears inside a word, or words the lead does not have', () => {
    for (const q of ['brien', 'ose', 'mple', '0100', 'jose smith', 'janet', '99']) {
      expect({ q, found: finds(q) }).toEqual({ q, found: false });
    }
  });

  it('works without email or phone and ignores empty words', () => {
    expect(searchTokens({ name: 'Al' })).toEqual(['a', 'al']);
    expect(searchTerms('  al   ')).toEqual([['al']]);
  });
});
