import { MemoryListingIndex } from '../src/memory-listing.index';
import { listingIndexContract } from './listing-index.contract';

listingIndexContract('in-process', () => ({ open: async () => new MemoryListingIndex() }));
