import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@elastic/elasticsearch';
import pino from 'pino';
import {
  commander,
  commanderAvailable,
  COMMANDER_PARAMETERS,
  describeWithEngines,
  seedCoreListings,
} from '@estate/testing';
import { ElasticsearchListingIndex } from '@estate/search/elasticsearch-listing.index';
import { listeningProduct, RESO_ADMIN } from './reso-fixture';

/**
 * RESO's own Web API Core 2.0 certification tests (tools/reso-commander) against the running product: every Core
 * scenario, and the Data Dictionary 2.0 checks on the `$metadata` it serves. Needs a JDK 17 and Maven (the tool is
 * built once and cached outside the repository); without them this fails under REQUIRE_ENGINES=1 and skips loudly
 * otherwise.
 */
const MINUTES = 60_000;

function commanderSuite(
  name: string,
  index?: { open: () => ElasticsearchListingIndex; cleanup: () => Promise<void> },
): void {
  describe(name, () => {
    let java = false;
    beforeAll(async () => {
      java = await commanderAvailable();
    }, 20 * MINUTES);

    it(
      'passes every Web API Core 2.0 scenario, and the Data Dictionary 2.0 checks of $metadata',
      async () => {
        if (!java) return;
        const { product, url, close } = await listeningProduct(index ? { listingIndex: index.open() } : {});
        try {
          const [first] = await seedCoreListings(url, RESO_ADMIN);
          await product.listingIndex.refresh();
          const core = await commander(['core', `${url}/reso/odata`, RESO_ADMIN, first, ...COMMANDER_PARAMETERS]);
          expect({ last: core.last, failures: core.code === 0 ? '' : core.output.slice(-4000) }).toEqual({
            last: expect.stringMatching(/^commander_core passed=4\d failed=0 skipped=\d$/),
            failures: '',
          });

          const metadata = await fetch(`${url}/reso/odata/$metadata`, {
            headers: { authorization: `Bearer ${RESO_ADMIN}` },
          });
          const file = join(tmpdir(), `reso-metadata-${process.pid}.xml`);
          writeFileSync(file, await metadata.text());
          const checked = await commander(['metadata', file]);
          expect({ last: checked.last, failures: checked.code === 0 ? '' : checked.output.slice(-4000) }).toEqual({
            last: expect.stringMatching(/^commander_metadata passed=[1-9]\d* failed=0 skipped=\d+$/),
            failures: '',
          });
        } finally {
          await close();
          await index?.cleanup();
        }
      },
      20 * MINUTES,
    );
  });
}

commanderSuite('RESO commander against the embedded product (SQLite index)');

describeWithEngines('RESO commander on the Elasticsearch index', ['ELASTICSEARCH_URL'], (urls) => {
  const alias = `reso-commander-${process.pid}-${Date.now()}`;
  commanderSuite('RESO commander against the product on Elasticsearch', {
    open: () => ElasticsearchListingIndex.connect(urls.ELASTICSEARCH_URL, { alias, log: pino({ level: 'silent' }) }),
    async cleanup() {
      const admin = new Client({ node: urls.ELASTICSEARCH_URL });
      try {
        const indices = Object.keys(await admin.indices.get({ index: `${alias}-*`, expand_wildcards: 'all' }));
        for (const name of indices) await admin.indices.delete({ index: name });
      } finally {
        await admin.close();
      }
    },
  });
});
