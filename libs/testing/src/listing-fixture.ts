/** A valid listing body, overridable field by field. */
export function listingBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    status: 'active',
    pricing: { listPrice: 450000, currency: 'USD' },
    propertyDetails: {
      propertyType: 'residential',
      propertySubType: 'single_family',
      bedrooms: 3,
      bathrooms: 2,
      livingArea: 1850,
      yearBuilt: 1998,
      description: 'Bright family home near the park',
      features: ['garage'],
    },
    location: {
      address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701', country: 'US' },
      latitude: 30.27,
      longitude: -97.74,
    },
    ...over,
  };
}
