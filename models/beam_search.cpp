// Beam search (see beam_search.hpp): the bookkeeping of hypotheses per batch item; the model
// runs outside.
#include <algorithm>
#include <cmath>
#include <string>

#include <cstring>

#include <stag/models/beam_search.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/runtime/session.hpp>

namespace stag {

BeamSearch::BeamSearch(std::size_t batch, const BeamSearchOptions& o) : o_(o), batch_(batch) {
  if (batch == 0) throw Error("stag::BeamSearch: the batch has no items");
  if (o.beam_size < 1) throw Error("stag::BeamSearch: beam_size must be at least 1");
  if (o.n_best < 1 || o.n_best > o.beam_size)
    throw Error("stag::BeamSearch: n_best must be in [1, beam_size], got " +
                std::to_string(o.n_best) + " for beam_size " + std::to_string(o.beam_size));
  if (o.max_new < 1) throw Error("stag::BeamSearch: max_new must be at least 1");
  if (o.eos_id < 0 || o.vocab_limit < 0 || !std::isfinite(o.length_penalty))
    throw Error(
        "stag::BeamSearch: eos_id and vocab_limit must not be negative, and "
        "length_penalty must be finite");
  if (o.first_id > o.eos_id)
    throw Error("stag::BeamSearch: first_id " + std::to_string(o.first_id) + " is above eos_id " +
                std::to_string(o.eos_id) + ": <eos> could never be produced");
  const std::size_t n = rows(), k = static_cast<std::size_t>(o.beam_size);
  beams_.assign(n, Beam{});
  tokens_.assign(n, o.bos_id);
  parents_.resize(n);
  live_.assign(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    parents_[r] = static_cast<std::int32_t>(r);
    live_[r] = r % k == 0;  // the beams of an item start as one: only the first is live
  }
  item_done_.assign(batch, 0);
  finished_.resize(batch);
  items_.resize(batch);
  for (std::size_t i = 0; i < batch; ++i) items_[i] = i;
  dropped_.resize(batch);
}

std::size_t BeamSearch::items_searching() const {
  return static_cast<std::size_t>(std::count(item_done_.begin(), item_done_.end(), 0));
}

void BeamSearch::stop(std::size_t slot) {
  if (slot >= batch_)
    throw Error("stag::BeamSearch::stop: slot " + std::to_string(slot) + " of " +
                std::to_string(batch_));
  if (item_done_[slot]) return;
  const std::size_t k = static_cast<std::size_t>(o_.beam_size);
  for (std::size_t r = slot * k; r < (slot + 1) * k; ++r) {
    if (live_[r] && step_ > 0)
      add_finished(slot, {beams_[r].ids, beams_[r].log_prob,
                          rank_score(beams_[r].log_prob, beams_[r].ids.size()), false});
    live_[r] = 0;
  }
  item_done_[slot] = 1;
}

std::vector<std::int32_t> BeamSearch::compact() {
  const std::size_t k = static_cast<std::size_t>(o_.beam_size);
  if (items_searching() == batch_) return {};
  std::vector<std::int32_t> from;
  std::size_t to = 0;
  for (std::size_t s = 0; s < batch_; ++s) {
    if (item_done_[s]) {
      dropped_[items_[s]] = results(s);
      continue;
    }
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t old = s * k + j, now = to * k + j;
      from.push_back(static_cast<std::int32_t>(old));
      if (now != old) beams_[now] = std::move(beams_[old]);
      tokens_[now] = tokens_[old];
      live_[now] = live_[old];
      parents_[now] = static_cast<std::int32_t>(now);  // the caller has reordered already
    }
    if (to != s) finished_[to] = std::move(finished_[s]);
    item_done_[to] = 0;
    items_[to] = items_[s];
    ++to;
  }
  batch_ = to;
  beams_.resize(rows());
  tokens_.resize(rows());
  live_.resize(rows());
  parents_.resize(rows());
  finished_.resize(batch_);
  item_done_.resize(batch_);
  items_.resize(batch_);
  return from;
}

bool BeamSearch::done() const {
  return std::all_of(item_done_.begin(), item_done_.end(), [](char d) { return d != 0; });
}

double BeamSearch::rank_score(double log_prob, std::size_t length) const {
  if (length == 0 || o_.length_penalty == 0.0) return log_prob;
  return log_prob / std::pow(static_cast<double>(length), o_.length_penalty);
}

void BeamSearch::add_finished(std::size_t item, Hypothesis h) {
  std::vector<Hypothesis>& f = finished_[item];
  // After every hypothesis of at least its score: ties keep the order they were found in.
  const auto at = std::upper_bound(f.begin(), f.end(), h.score,
                                   [](double s, const Hypothesis& x) { return s > x.score; });
  f.insert(at, std::move(h));
  if (f.size() > static_cast<std::size_t>(o_.beam_size)) f.pop_back();
}

void BeamSearch::advance(std::span<const float> logits, std::int64_t vocab) {
  if (done()) throw Error("stag::BeamSearch::advance: the search is done");
  if (vocab < 1 || logits.size() != rows() * static_cast<std::size_t>(vocab))
    throw Error("stag::BeamSearch::advance: expected logits [" + std::to_string(rows()) + ", " +
                std::to_string(vocab) + "], got " + std::to_string(logits.size()) + " values");
  const std::int64_t limit =
      o_.vocab_limit > 0 ? std::min<std::int64_t>(vocab, o_.vocab_limit) : vocab;
  const std::int64_t first = o_.first_id < 0 ? o_.eos_id : o_.first_id;
  if (o_.eos_id >= limit)
    throw Error("stag::BeamSearch: eos id " + std::to_string(o_.eos_id) + " is outside the " +
                std::to_string(limit) + " ids decoded");
  const std::size_t k = static_cast<std::size_t>(o_.beam_size);
  std::vector<Beam> beams(rows());
  std::vector<std::int32_t> tokens(rows(), o_.eos_id), parents(rows());
  std::vector<char> live(rows(), 0);
  for (std::size_t r = 0; r < rows(); ++r) parents[r] = static_cast<std::int32_t>(r);

  struct Candidate {
    double log_prob;
    std::size_t row;
    std::int32_t id;
  };
  std::vector<Candidate> cands;
  std::vector<double> logp;
  for (std::size_t item = 0; item < batch_; ++item) {
    if (item_done_[item]) continue;
    cands.clear();
    for (std::size_t r = item * k; r < (item + 1) * k; ++r) {
      if (!live_[r]) continue;
      const float* x = logits.data() + r * static_cast<std::size_t>(vocab);
      // log-softmax over the allowed ids [first, limit)
      double m = -INFINITY;
      for (std::int64_t c = first; c < limit; ++c) {
        if (std::isnan(x[c]))
          throw Error("stag::BeamSearch: NaN in the logits of row " + std::to_string(r) + " (id " +
                      std::to_string(c) + "): the model's output is not a number");
        m = std::max(m, static_cast<double>(x[c]));
      }
      double sum = 0.0;
      for (std::int64_t c = first; c < limit; ++c) sum += std::exp(x[c] - m);
      const double lse = m + std::log(sum);
      for (std::int64_t c = first; c < limit; ++c)
        cands.push_back({beams_[r].log_prob + (x[c] - lse), r, static_cast<std::int32_t>(c)});
    }
    const std::size_t keep = std::min(cands.size(), 2 * k);
    std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(keep), cands.end(),
                      [](const Candidate& a, const Candidate& b) {
                        if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
                        if (a.row != b.row) return a.row < b.row;
                        return a.id < b.id;
                      });
    std::size_t next = 0;
    for (std::size_t rank = 0; rank < keep && next < k; ++rank) {
      const Candidate& c = cands[rank];
      const Beam& from = beams_[c.row];
      if (c.id == o_.eos_id) {
        if (rank < k)
          add_finished(item,
                       {from.ids, c.log_prob, rank_score(c.log_prob, from.ids.size() + 1), true});
        continue;
      }
      const std::size_t r = item * k + next++;
      beams[r].ids = from.ids;
      beams[r].ids.push_back(c.id);
      beams[r].log_prob = c.log_prob;
      tokens[r] = c.id;
      parents[r] = static_cast<std::int32_t>(c.row);
      live[r] = 1;
    }
    bool is_done = next == 0;
    if (!is_done && finished_[item].size() >= k) {
      if (o_.early_stop) {
        is_done = true;
      } else {
        double best_live = -INFINITY;
        for (std::size_t r = item * k; r < item * k + next; ++r)
          best_live = std::max(best_live, rank_score(beams[r].log_prob, beams[r].ids.size()));
        is_done = best_live <= finished_[item].back().score;
      }
    }
    if (!is_done && step_ + 1 >= o_.max_new) {
      for (std::size_t r = item * k; r < item * k + next; ++r)
        add_finished(item, {beams[r].ids, beams[r].log_prob,
                            rank_score(beams[r].log_prob, beams[r].ids.size()), false});
      is_done = true;
    }
    if (is_done) {
      item_done_[item] = 1;
      for (std::size_t r = item * k; r < (item + 1) * k; ++r) live[r] = 0;
    }
  }
  beams_ = std::move(beams);
  tokens_ = std::move(tokens);
  parents_ = std::move(parents);
  live_ = std::move(live);
  ++step_;
}

std::vector<Hypothesis> BeamSearch::results(std::size_t slot) const {
  if (slot >= batch_)
    throw Error("stag::BeamSearch::results: slot " + std::to_string(slot) + " of " +
                std::to_string(batch_));
  const std::size_t k = static_cast<std::size_t>(o_.beam_size);
  std::vector<Hypothesis> all = finished_[slot];
  for (std::size_t r = slot * k; r < (slot + 1) * k; ++r)
    if (live_[r] && !item_done_[slot])
      all.push_back({beams_[r].ids, beams_[r].log_prob,
                     rank_score(beams_[r].log_prob, beams_[r].ids.size()), false});
  std::stable_sort(all.begin(), all.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  if (all.size() > static_cast<std::size_t>(o_.n_best))
    all.resize(static_cast<std::size_t>(o_.n_best));
  return all;
}

std::vector<std::vector<Hypothesis>> BeamSearch::results() const {
  std::vector<std::vector<Hypothesis>> out = dropped_;
  for (std::size_t s = 0; s < batch_; ++s) out[items_[s]] = results(s);
  return out;
}

void reorder_cache_rows(Session& s, const std::vector<std::string>& names,
                        std::span<const std::int32_t> parents, std::int64_t positions) {
  const auto rows = static_cast<std::int64_t>(parents.size());
  bool identity = true;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t p = parents[static_cast<std::size_t>(r)];
    if (p < 0 || p >= rows) throw Error("stag: reorder_cache_rows: parent row out of range");
    identity = identity && p == r;
  }
  if (identity) return;
  std::vector<std::byte> scratch;
  for (const std::string& name : names) {
    Array cache = s.params().at(name);  // shares the session's storage
    if (cache.rank() != 4 || cache.dim(0) != rows)
      throw Error("stag: reorder_cache_rows: '" + name + "' is " + cache.describe() + ", not [" +
                  std::to_string(rows) + ", heads, positions, head_dim]");
    const std::int64_t heads = cache.dim(1), len = cache.dim(2), dh = cache.dim(3);
    const std::size_t es = dtype_size(cache.dtype());
    const std::size_t run =
        static_cast<std::size_t>(std::clamp<std::int64_t>(positions, 0, len) * dh) * es;
    const std::size_t head_stride = static_cast<std::size_t>(len * dh) * es;
    // Gather the written positions of every row, then scatter them to their new rows.
    scratch.resize(static_cast<std::size_t>(rows * heads) * run);
    auto* base = static_cast<std::byte*>(cache.raw());
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t h = 0; h < heads; ++h)
        std::memcpy(scratch.data() + static_cast<std::size_t>(r * heads + h) * run,
                    base + static_cast<std::size_t>(r * heads + h) * head_stride, run);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t p = parents[static_cast<std::size_t>(r)];
      if (p == r) continue;
      for (std::int64_t h = 0; h < heads; ++h)
        std::memcpy(base + static_cast<std::size_t>(r * heads + h) * head_stride,
                    scratch.data() + static_cast<std::size_t>(p * heads + h) * run, run);
    }
    // On a device the host array is a copy (fetched by params()): the reordered cache goes back.
    // NOTE: a whole-cache round trip per reordering step; a gather kernel would stay on the GPU.
    if (s.device() != Device::cpu) s.set_param(name, cache);
  }
}

}  // namespace stag
