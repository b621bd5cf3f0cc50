// The status page's HTML: one self-contained document (inline CSS and JS,
// charts drawn on <canvas>, nothing fetched but /status.json), kept as a C++
// raw string so the binary needs no files beside it.
//
// The page polls /status.json?since=T every 2 s and appends the new points
// to a history of its own (at most 1800 points per model: an hour at 2 s),
// so an open page keeps a longer curve than the server's ring. Every model
// is a <section data-model="NAME">; each chart is a <canvas data-chart=...
// data-points=N> where N is the number of points drawn, and <body> carries
// data-state ("loading", "ok" or "error") and data-polls, for tests.
// Model names are set as text (textContent), never parsed as HTML.
#ifndef CLICKD_SERVER_STATUS_STATUS_HTML_H_
#define CLICKD_SERVER_STATUS_STATUS_HTML_H_

#include <string_view>

namespace clickd::status {

extern const std::string_view kStatusPageHtml;

}  // namespace clickd::status

#endif  // CLICKD_SERVER_STATUS_STATUS_HTML_H_
