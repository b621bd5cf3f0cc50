package dev.clickd.client;

/** One feature: a name or a pre-hashed 64-bit id, and its value (0 drops it). */
public record Feature(String name, long id, boolean isId, float value) {
  public static Feature name(String name) {
    return new Feature(name, 0, false, 1f);
  }

  public static Feature name(String name, float value) {
    return new Feature(name, 0, false, value);
  }

  public static Feature id(long id) {
    return new Feature("", id, true, 1f);
  }

  public static Feature id(long id, float value) {
    return new Feature("", id, true, value);
  }
}
