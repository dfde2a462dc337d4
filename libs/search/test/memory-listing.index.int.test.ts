import { MemoryListingIndex } from '../src/memory-listing.index';
import { fieldQueryContract } from './field-query.contract';
import { listingIndexContract } from './listing-index.contract';

listingIndexContract('in-process', () => ({ open: async () => new MemoryListingIndex() }));

fieldQueryContract('in-process', () => ({ open: async () => new MemoryListingIndex() }));
