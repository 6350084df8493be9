// The built-in plugins. Filters: NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector
// and required affinity), NodeResourcesFit (CPU, memory). Scores: the placement policies
// (bestfit, spread, gpupacking, dotproduct, random, fgd) and the helpers every profile carries
// (Topology, GangLocality, NodeAffinityPreferred, TaintPreferNoSchedule).
#ifndef TESSERA_CORE_PLUGINS_H_
#define TESSERA_CORE_PLUGINS_H_

#include <memory>
#include <string_view>

#include "core/framework.h"

namespace tessera::core {

// True when the node's labels carry every key/value of a nodeSelector.
bool MatchesSelector(const Labels& labels, const Labels& selector);
// True when the node's labels satisfy one requirement / all requirements of a term.
bool MatchesRequirement(const Labels& labels, const LabelRequirement& r);
bool MatchesTerm(const Labels& labels, const NodeSelectorTerm& term);
// True when `t` tolerates `taint`.
bool Tolerates(const Toleration& t, const Taint& taint);

std::unique_ptr<FilterPlugin> MakeNodeUnschedulableFilter();
std::unique_ptr<FilterPlugin> MakeTaintTolerationFilter();
std::unique_ptr<FilterPlugin> MakeNodeAffinityFilter();
std::unique_ptr<FilterPlugin> MakeNodeResourcesFitFilter();

// Policy scores (one per profile).
std::unique_ptr<ScorePlugin> MakeBestFitScore();
std::unique_ptr<ScorePlugin> MakeSpreadScore();
std::unique_ptr<ScorePlugin> MakeGpuPackingScore();
std::unique_ptr<ScorePlugin> MakeDotProductScore();
std::unique_ptr<ScorePlugin> MakeRandomScore();

// Helper scores.
std::unique_ptr<ScorePlugin> MakeTopologyScore();
std::unique_ptr<ScorePlugin> MakeGangLocalityScore();
std::unique_ptr<ScorePlugin> MakeNodeAffinityPreferredScore();
std::unique_ptr<ScorePlugin> MakeTaintPreferNoScheduleScore();

}  // namespace tessera::core

#endif  // TESSERA_CORE_PLUGINS_H_
