// Example graphs that the command-line programs can draw or summarise (stag-graph --model NAME),
// each with its training graph. Adding a model is one line in examples.cpp:
//   example<models::gpt>("gpt", "mini GPT"),      // G: a namespace-scope constexpr Graph
#pragma once

#include <span>
#include <string_view>

#include <stag/stag.hpp>

namespace stag::examples {

struct ExampleModel {
  std::string_view name;   // what --model takes
  std::string_view about;  // one line for --list
  GraphView forward;       // the model as written (its result is the loss)
  GraphView training;      // forward + backward, from stag::grad
};

// Every example, in the order --list prints them.
std::span<const ExampleModel> example_models();
// The example called `name`, or nullptr.
const ExampleModel* find_example(std::string_view name);

// The training graph of model G, built once at compile time.
template <const auto& G>
inline constexpr auto training_graph = grad<G>();

template <const auto& G>
ExampleModel example(std::string_view name, std::string_view about) {
  return ExampleModel{name, about, G, training_graph<G>};
}

}  // namespace stag::examples
