// What Eigen's ThreadPoolTempl asks of its Environment, apart from how a
// thread starts: tasks are plain closures and threads are std::threads
// joined on destruction. The pools derive their Environment from this and
// add CreateThread, which names (and pins or widens) each new thread.
//
// Free of TensorFlow types. Thread-safety: as Eigen requires (stateless).
#ifndef GRAPHI_TF_CC_TEAMS_EIGEN_ENVIRONMENT_H_
#define GRAPHI_TF_CC_TEAMS_EIGEN_ENVIRONMENT_H_

#include <functional>
#include <thread>
#include <utility>

namespace graphi {

struct EigenEnvironmentBase {
  struct Task {
    std::function<void()> f;
  };

  class EnvThread {
   public:
    explicit EnvThread(std::function<void()> f) : thread_(std::move(f)) {}
    ~EnvThread() { thread_.join(); }
    void OnCancel() {}

   private:
    std::thread thread_;
  };

  Task CreateTask(std::function<void()> f) { return Task{std::move(f)}; }
  void ExecuteTask(const Task& t) { t.f(); }
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_EIGEN_ENVIRONMENT_H_
