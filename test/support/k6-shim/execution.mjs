import { state } from './state.mjs';
/** k6/execution: the iteration and VU numbers the runner sets. */
export default {
  scenario: {
    get iterationInTest() {
      return state.iteration;
    },
  },
  vu: {
    get idInTest() {
      return state.vu;
    },
  },
};
