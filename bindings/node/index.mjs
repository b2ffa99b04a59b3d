// ES module entry: the same exports as index.js.
import fragstat from './index.js';

export const { Client, FragstatError, CODES, games, game, version } = fragstat;
export default fragstat;
