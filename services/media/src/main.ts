import { exitOnStartFailure, runServiceProcess } from '@estate/platform/process';
import { mediaApp } from './app';
import { composeMedia } from './compose';
import { loadConfig } from './config';

runServiceProcess({
  service: 'media',
  title: 'Media service',
  loadConfig,
  compose: composeMedia,
  register: (app, runtime) => app.register(mediaApp, { runtime }),
}).catch(exitOnStartFailure);
