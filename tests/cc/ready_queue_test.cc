// Unit tests of the ready-op ordering policies.
#include "cc/teams/ready_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace graphi {
namespace {

ReadyTask Task(int64_t rank, uint64_t seq, uint64_t step_order = 0) {
  ReadyTask t;
  t.rank = rank;
  t.seq = seq;
  t.step_order = step_order;
  return t;
}

std::vector<uint64_t> DrainSeqs(ReadyQueue* q) {
  std::vector<uint64_t> order;
  ReadyTask t;
  while (q->Pop(&t)) order.push_back(t.seq);
  return order;
}

TEST(ReadyQueueTest, FifoServesInSubmissionOrderWhateverTheRank) {
  auto q = NewReadyQueue(ReadyPolicy::kFifo);
  q->Push(Task(1, 0));
  q->Push(Task(9, 1));
  q->Push(Task(5, 2));
  EXPECT_EQ(DrainSeqs(q.get()), (std::vector<uint64_t>{0, 1, 2}));
}

TEST(ReadyQueueTest, CriticalPathFirstServesHighestRankFirst) {
  auto q = NewReadyQueue(ReadyPolicy::kCriticalPathFirst);
  q->Push(Task(1, 0));
  q->Push(Task(9, 1));
  q->Push(Task(5, 2));
  EXPECT_EQ(DrainSeqs(q.get()), (std::vector<uint64_t>{1, 2, 0}));
}

TEST(ReadyQueueTest, CriticalPathFirstBreaksTiesBySubmissionOrder) {
  auto q = NewReadyQueue(ReadyPolicy::kCriticalPathFirst);
  for (uint64_t i = 0; i < 20; ++i) q->Push(Task(0, i));
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < 20; ++i) expected.push_back(i);
  EXPECT_EQ(DrainSeqs(q.get()), expected);
}

TEST(ReadyQueueTest, CriticalPathFirstServesTheOldestStepFirstThenByRank) {
  // Step 2's first op has the highest rank of all (its whole path remains),
  // yet the last ops of step 1, which arrived first, go before it.
  auto q = NewReadyQueue(ReadyPolicy::kCriticalPathFirst);
  q->Push(Task(/*rank=*/90, /*seq=*/0, /*step_order=*/2));
  q->Push(Task(/*rank=*/5, /*seq=*/1, /*step_order=*/1));
  q->Push(Task(/*rank=*/10, /*seq=*/2, /*step_order=*/1));
  q->Push(Task(/*rank=*/80, /*seq=*/3, /*step_order=*/2));
  EXPECT_EQ(DrainSeqs(q.get()), (std::vector<uint64_t>{2, 1, 0, 3}));
}

TEST(ReadyQueueTest, FifoIgnoresTheStepOrder) {
  auto q = NewReadyQueue(ReadyPolicy::kFifo);
  q->Push(Task(0, 0, /*step_order=*/2));
  q->Push(Task(0, 1, /*step_order=*/1));
  EXPECT_EQ(DrainSeqs(q.get()), (std::vector<uint64_t>{0, 1}));
}

TEST(ReadyQueueTest, PopOnEmptyQueueReturnsFalse) {
  for (ReadyPolicy p : {ReadyPolicy::kFifo, ReadyPolicy::kCriticalPathFirst}) {
    auto q = NewReadyQueue(p);
    ReadyTask t;
    EXPECT_FALSE(q->Pop(&t));
    EXPECT_TRUE(q->empty());
  }
}

TEST(ReadyQueueTest, PolicyNamesRoundTrip) {
  for (ReadyPolicy p : {ReadyPolicy::kFifo, ReadyPolicy::kCriticalPathFirst}) {
    ReadyPolicy parsed;
    ASSERT_TRUE(ParseReadyPolicy(ReadyPolicyName(p), &parsed));
    EXPECT_EQ(parsed, p);
  }
  ReadyPolicy unused;
  EXPECT_FALSE(ParseReadyPolicy("random", &unused));
}

}  // namespace
}  // namespace graphi
