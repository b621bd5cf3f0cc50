package dev.clickd.client;

import clickd.v1.ClickdOuterClass;
import java.util.ArrayList;
import java.util.List;

/** An example: namespaces of features (a name may repeat: its features pool). */
public record Example(List<Namespace> namespaces) {
  /** A namespace's features. */
  public record Namespace(String name, List<Feature> features) {}

  public Example {
    namespaces = List.copyOf(namespaces);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builds an Example namespace by namespace. */
  public static final class Builder {
    private final List<Namespace> namespaces = new ArrayList<>();

    public Builder add(String namespace, Feature... features) {
      namespaces.add(new Namespace(namespace, List.of(features)));
      return this;
    }

    public Builder add(String namespace, List<Feature> features) {
      namespaces.add(new Namespace(namespace, List.copyOf(features)));
      return this;
    }

    public Example build() {
      return new Example(namespaces);
    }
  }

  /** The message in a wire form; {@code seed} is the model's hashing.seed (KEYS only). */
  public ClickdOuterClass.Example toProto(Wire wire, long seed) {
    ClickdOuterClass.Example.Builder out = ClickdOuterClass.Example.newBuilder();
    for (Namespace ns : namespaces) {
      out.addNamespaces(namespace(ns, wire, seed));
    }
    return out.build();
  }

  /** The message in the FEATURES form. */
  public ClickdOuterClass.Example toProto() {
    return toProto(Wire.FEATURES, 0);
  }

  private static boolean allOnes(List<Feature> fs) {
    return fs.stream().allMatch(f -> f.value() == 1f);
  }

  private static ClickdOuterClass.Namespace namespace(Namespace ns, Wire wire, long seed) {
    ClickdOuterClass.Namespace.Builder b = ClickdOuterClass.Namespace.newBuilder().setName(ns.name());
    switch (wire) {
      case PACKED -> {
        // An empty values list means every value is 1.
        List<Feature> names = ns.features().stream().filter(f -> !f.isId()).toList();
        List<Feature> ids = ns.features().stream().filter(Feature::isId).toList();
        names.forEach(f -> b.addNames(f.name()));
        if (!allOnes(names)) {
          names.forEach(f -> b.addValues(f.value()));
        }
        ids.forEach(f -> b.addIds(f.id()));
        if (!allOnes(ids)) {
          ids.forEach(f -> b.addIdValues(f.value()));
        }
      }
      case KEYS -> {
        long nsHash = Hashing.namespaceHash(ns.name(), seed);
        for (Feature f : ns.features()) {
          b.addKeys(f.isId() ? Hashing.idKey(nsHash, f.id()) : Hashing.namedKey(nsHash, f.name()));
        }
        if (!allOnes(ns.features())) {
          ns.features().forEach(f -> b.addKeyValues(f.value()));
        }
      }
      default -> {
        for (Feature f : ns.features()) {
          ClickdOuterClass.Feature.Builder fb = ClickdOuterClass.Feature.newBuilder();
          if (f.isId()) {
            fb.setId(f.id());
          } else {
            fb.setName(f.name());
          }
          if (f.value() != 1f) {
            fb.setValue(f.value());
          }
          b.addFeatures(fb);
        }
      }
    }
    return b.build();
  }
}
