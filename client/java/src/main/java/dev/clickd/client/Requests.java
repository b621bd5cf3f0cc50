package dev.clickd.client;

import clickd.v1.ClickdOuterClass.FeedbackItem;
import clickd.v1.ClickdOuterClass.FeedbackRequest;
import clickd.v1.ClickdOuterClass.Impression;
import clickd.v1.ClickdOuterClass.LabeledExample;
import clickd.v1.ClickdOuterClass.PredictRequest;
import clickd.v1.ClickdOuterClass.UpdateRequest;
import java.util.List;

/**
 * Request builders from {@link Example}s in a wire form. Each returns the
 * generated message's builder, so the caller sets the other fields
 * (setLogImpressions, setUncertainty, setExplainTopK, setVariant,
 * setMinModelVersion, setIdempotencyKey, setReturnMargins, setRequestId).
 */
public final class Requests {
  private Requests() {}

  /** A Predict of candidates that share a context (null: none). */
  public static PredictRequest.Builder predict(
      String model, Example context, List<Example> candidates, Wire wire, long seed) {
    PredictRequest.Builder b = PredictRequest.newBuilder().setModel(model);
    if (context != null) {
      b.setContext(context.toProto(wire, seed));
    }
    candidates.forEach(c -> b.addCandidates(c.toProto(wire, seed)));
    return b;
  }

  /** A labeled example; importance 0 leaves it unset (read as 1). */
  public static LabeledExample labeled(Example example, float label, float importance, Wire wire, long seed) {
    LabeledExample.Builder b = LabeledExample.newBuilder().setExample(example.toProto(wire, seed)).setLabel(label);
    if (importance != 0) {
      b.setImportance(importance);
    }
    return b.build();
  }

  /** An impression: a context and its candidates with their labels. */
  public static Impression impression(
      Example context, List<Example> candidates, List<Float> labels, Wire wire, long seed) {
    if (candidates.size() != labels.size()) {
      throw new IllegalArgumentException("one label per candidate");
    }
    Impression.Builder b = Impression.newBuilder();
    if (context != null) {
      b.setContext(context.toProto(wire, seed));
    }
    for (int i = 0; i < candidates.size(); i++) {
      b.addCandidates(labeled(candidates.get(i), labels.get(i), 0, wire, seed));
    }
    return b.build();
  }

  /** An Update of labeled examples (add impressions with addImpressions). */
  public static UpdateRequest.Builder update(String model, List<LabeledExample> examples) {
    return UpdateRequest.newBuilder().setModel(model).addAllExamples(examples);
  }

  /** One Feedback item: a label for an impression; eventTimeMicros 0: now. */
  public static FeedbackItem click(long impressionId, float label, long eventTimeMicros) {
    return FeedbackItem.newBuilder()
        .setImpressionId(impressionId)
        .setLabel(label)
        .setEventTimeUnixMicros(eventTimeMicros)
        .build();
  }

  /** A Feedback of items (set an idempotency key with setIdempotencyKey). */
  public static FeedbackRequest.Builder feedback(String model, List<FeedbackItem> items) {
    return FeedbackRequest.newBuilder().setModel(model).addAllItems(items);
  }
}
