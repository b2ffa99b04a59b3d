// ES module entry: the same exports as gamedig.js (`import { GameDig } from 'fragstat/gamedig'`).
import adapter from './gamedig.js';

export const { GameDig, TYPES, OLD_IDS } = adapter;
export default adapter;
