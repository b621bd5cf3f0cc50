package dev.clickd.client;

/** The form an Example takes on the wire (docs/api.md, "Wire forms"); all teach the same coordinates. */
public enum Wire {
  /** One Feature message per feature. */
  FEATURES,
  /** Each namespace's names and ids as packed lists. */
  PACKED,
  /**
   * Hashed here into packed unfolded keys with the model's hashing seed, so
   * the server neither parses nor hashes names (a 100-candidate Predict costs
   * the server about a quarter of the work).
   */
  KEYS
}
