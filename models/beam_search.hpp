// Beam search over any model that scores a next token per row: the search keeps `beam_size`
// hypotheses per batch item in rows item * beam_size + j, and after each step says which row
// each new hypothesis continues (parents(), to reorder a cache by) and which token it feeds
// next (tokens()). The caller runs its model on tokens() at the rows that are live() and
// hands back the logits of every row. Used by Seq2SeqGenerator (models/seq2seq_generator.hpp);
// a language model uses it the same way over its decode step.
//
// The rules (those of fairseq and Hugging Face's BeamSearchScorer):
// - Scores: a hypothesis' log-probability is the sum of its tokens' log-softmax over the
//   allowed ids ([first_id, vocab_limit); first_id is eos_id unless given, as stag's
//   tokenisers put padding and <bos> below <eos>, which are never produced; a Hugging Face
//   vocabulary allows every id, first_id 0); it ranks by log_prob / length^length_penalty,
//   the length counting <eos>
//   (length_penalty 0: the plain sum, which favours short outputs; 1: the mean).
// - Each step ranks the 2 * beam_size best continuations of the item's live hypotheses. An
//   <eos> among the first beam_size of them ends a hypothesis (it joins the finished ones,
//   at most beam_size kept, best first); the first beam_size others live on.
// - An item is done when beam_size hypotheses have finished and no live one ranks above the
//   worst of them at its current length (or, with early_stop, as soon as beam_size have
//   finished); at max_new steps the live ones are added as they are (not finished).
// - Ties go to the lower row, then the lower id; with beam_size 1 the search is greedy
//   decoding (the argmax at each step, up to the first <eos>).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stag {

class Session;

struct BeamSearchOptions {
  int beam_size = 4;
  int n_best = 1;               // hypotheses returned per item, best first (<= beam_size)
  double length_penalty = 1.0;  // rank by log_prob / length^length_penalty
  int max_new = 64;             // tokens per hypothesis at most, <eos> included
  // Stop an item at beam_size finished hypotheses, however poor. Off (the default, as in
  // Hugging Face): go on while a live hypothesis can still rank above the worst finished one.
  // On, a model whose every unlikely token is equally unlikely (label smoothing) ends the search
  // with beam_size junk hypotheses that took <eos> early, before the likely one ends.
  bool early_stop = false;
  std::int32_t bos_id = 2, eos_id = 3;  // data::kBosId, data::kEosId
  std::int32_t vocab_limit = 0;         // ids from here up are never produced; 0: all
  std::int32_t first_id = -1;           // ids below it are never produced; -1: eos_id
};

// One new token, as a streaming callback sees it (Generator, Seq2SeqGenerator).
struct TokenEvent {
  std::size_t row = 0;    // the prompt's or source's index in the batch (0 for one prompt)
  std::size_t index = 0;  // 0 for the first new token of the row
  std::int32_t id = 0;
  std::string_view text;  // the token decoded on its own (empty without a tokeniser)
};

struct Hypothesis {
  std::vector<std::int32_t> ids;  // without <bos> and <eos>
  double log_prob = 0.0;          // of the ids and, when finished, of <eos>
  double score = 0.0;             // log_prob / length^length_penalty
  bool finished = false;          // ended with <eos> (not cut at max_new)
};

class BeamSearch {
 public:
  // stag::Error on beam_size < 1, n_best outside [1, beam_size], max_new < 1, batch 0.
  BeamSearch(std::size_t batch, const BeamSearchOptions& options);

  // The items still in the rows (all of them until compact() drops done ones) and the rows
  // they take, beam_size each: the item in slot s has rows s * beam_size .. + beam_size - 1.
  std::size_t batch() const { return batch_; }
  std::size_t rows() const { return batch_ * static_cast<std::size_t>(o_.beam_size); }
  // The item (its index at construction) in each slot.
  const std::vector<std::size_t>& items() const { return items_; }
  std::size_t items_searching() const;  // slots whose item is not done
  bool slot_done(std::size_t slot) const { return item_done_.at(slot) != 0; }
  // The ids (without <bos>) of the hypothesis in a row; empty for a dead row.
  const std::vector<std::int32_t>& row_ids(std::size_t row) const { return beams_.at(row).ids; }
  int step() const { return step_; }  // steps taken; the next tokens sit at this position
  // Per row: the token to feed next (<bos> at first), whether the row carries a live hypothesis
  // (a dead row's logits are ignored; feed it as inactive), and after advance() the row of
  // the previous step that it continues (reorder per-row state such as a cache by it).
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  const std::vector<char>& live() const { return live_; }
  const std::vector<std::int32_t>& parents() const { return parents_; }
  bool done() const;

  // The logits [rows(), vocab] of the last fed tokens (row-major; dead rows may hold anything).
  void advance(std::span<const float> logits, std::int64_t vocab);

  // Ends the search of the item in `slot` now: its live hypotheses join the finished ones as
  // they are (finished = false), as at max_new. Done items are left as they are.
  void stop(std::size_t slot);

  // Drops the slots of done items, so that a caller can shrink its batch: their results are
  // kept for results(), and the other items move up in order. Call it after reordering by
  // parents() (which become the identity). Returns, for each new row, the row it was before
  // (move per-row state such as caches by it); empty when no item is done.
  std::vector<std::int32_t> compact();

  // n_best hypotheses per item (by index at construction), best first. Live hypotheses of
  // unfinished items count.
  std::vector<std::vector<Hypothesis>> results() const;
  // The same for the item in one slot.
  std::vector<Hypothesis> results(std::size_t slot) const;

 private:
  struct Beam {
    std::vector<std::int32_t> ids;
    double log_prob = 0.0;
  };
  double rank_score(double log_prob, std::size_t length) const;
  void add_finished(std::size_t item, Hypothesis h);

  BeamSearchOptions o_;
  std::size_t batch_ = 0;
  int step_ = 0;
  std::vector<Beam> beams_;  // per row
  std::vector<std::int32_t> tokens_, parents_;
  std::vector<char> live_, item_done_;
  std::vector<std::vector<Hypothesis>> finished_;  // per slot, best first, <= beam_size
  std::vector<std::size_t> items_;                 // per slot: the item's index
  std::vector<std::vector<Hypothesis>> dropped_;   // per item: results of compacted items
};

// After a step of a beam search over a model with caches: row r of each state tensor `names`
// of `s` ([rows, heads, max_len, head_dim], positions on axis 2) becomes row parents[r], over
// the first `positions` positions (those written so far). Rows that are their own parent are
// not copied. On a device, through the host copy and Session::set_param.
void reorder_cache_rows(Session& s, const std::vector<std::string>& names,
                        std::span<const std::int32_t> parents, std::int64_t positions);

}  // namespace stag
