// Unit tests of the ready-op ordering policies.
#include "cc/executor/ready_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace graphi {
namespace {

ReadyTask Task(int64_t rank, uint64_t seq) {
  ReadyTask t;
  t.rank = rank;
  t.seq = seq;
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
