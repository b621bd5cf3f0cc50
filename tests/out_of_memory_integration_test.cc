// Out of memory against the real clickd (issue 33, N8 and N3): the server's
// address space is capped with prlimit(RLIMIT_AS) while it runs, so that
// its allocations fail (std::bad_alloc) as they would under a tight memory
// limit, and then:
// - an Update refused for lack of memory is not in the update log: a
//   restart learns exactly the acknowledged updates;
// - a snapshot that runs out of memory fails with an error and the server
//   goes on serving (no abort).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;

// The process's VmSize in bytes (0 if unreadable).
uint64_t VirtualBytes(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "VmSize:")) return std::stoull(std::string(rest)) * 1024;
  }
  return 0;
}

// Caps the server's address space (the soft limit, so that it can be
// lifted again) at its size now plus `headroom`.
void CapAddressSpace(pid_t pid, uint64_t headroom) {
  const uint64_t now = VirtualBytes(pid);
  ASSERT_GT(now, 0u);
  struct rlimit limit = {now + headroom, RLIM_INFINITY};
  ASSERT_EQ(prlimit(pid, RLIMIT_AS, &limit, nullptr), 0) << std::strerror(errno);
}

// 2,000 examples of 100 features each that no earlier batch has: 200,000
// new coordinates.
v1::UpdateRequest FreshBatch(int batch) {
  v1::UpdateRequest r;
  r.set_model("default");
  for (int i = 0; i < 2000; ++i) {
    auto* le = r.add_examples();
    auto* ns = le->mutable_example()->add_namespaces();
    ns->set_name("f");
    for (int j = 0; j < 100; ++j) {
      ns->add_features()->set_id((static_cast<uint64_t>(batch) * 2000 + i) * 100 + j);
    }
    le->set_label(i % 3 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

uint64_t Updates(v1::Clickd::Stub& stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GetModelRequest request;
  request.set_model("default");
  v1::GetModelResponse response;
  const grpc::Status status = stub.GetModel(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.model().updates();
}

std::string DataDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(OutOfMemory, ARefusedUpdateIsNotLearnedAtRestart) {
  const std::string dir = DataDir("oom_refused_update");
  ServerOptions options;
  options.flags = {"--data_dir=" + dir, "--snapshot_interval=0", "--snapshot_on_shutdown=false"};
  auto server = ServerProcess::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = (*server)->NewStub();
  // Warm: the server's threads and heaps exist before the cap.
  uint64_t acknowledged = 0;
  int batch = 0;
  for (; batch < 4; ++batch) {
    grpc::ClientContext context;
    v1::UpdateResponse response;
    ASSERT_TRUE(stub->Update(&context, FreshBatch(batch), &response).ok());
    acknowledged += 2000;
  }
  CapAddressSpace((*server)->pid(), uint64_t{400} << 20);

  // Fresh coordinates until a few Updates are refused for lack of memory
  // (bounded: 200 batches, 3 minutes).
  int refused = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  for (; batch < 200 && refused < 5 && std::chrono::steady_clock::now() < give_up; ++batch) {
    const v1::UpdateRequest request = FreshBatch(batch);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::UpdateResponse response;
    const grpc::Status status = stub->Update(&context, request, &response);
    if (status.ok()) {
      acknowledged += request.examples_size();
      continue;
    }
    ASSERT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << status.error_message() << " after " << acknowledged << " examples\n"
        << (*server)->Output();
    ASSERT_NE(status.error_message().find("out of memory"), std::string::npos)
        << status.error_message();
    ++refused;
  }
  ASSERT_GE(refused, 1) << "no Update ran out of memory; acknowledged " << acknowledged;
  ASSERT_GT(acknowledged, 0u);
  ASSERT_TRUE((*server)->running()) << (*server)->Output();
  // A refusal changed nothing now...
  EXPECT_EQ(Updates(*stub), acknowledged);

  // ... nor at the restart (SIGKILL: no snapshot; the log is replayed),
  // without the cap.
  stub.reset();
  (*server)->Signal(SIGKILL);
  ASSERT_TRUE((*server)->WaitForExit(std::chrono::seconds(20)).has_value());
  server->reset();
  auto restarted = ServerProcess::Start(options);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  stub = (*restarted)->NewStub();
  const uint64_t restored = Updates(*stub);
  EXPECT_EQ(restored, acknowledged) << refused << " Updates were refused";
  std::cout << "acknowledged " << acknowledged << " examples, " << refused
            << " Updates refused out of memory, restored " << restored << std::endl;
  stub.reset();
  EXPECT_EQ((*restarted)->Stop().ToString(), "exit 0");
  std::filesystem::remove_all(dir);
}

// A snapshot whose copy of the model does not fit fails with an error; the
// server does not abort, keeps serving and learning, and snapshots once
// memory allows again.
TEST(OutOfMemory, ASnapshotThatDoesNotFitFailsAndTheServerGoesOn) {
  const std::string dir = DataDir("oom_snapshot");
  ServerOptions options;
  options.flags = {"--data_dir=" + dir, "--snapshot_interval=0", "--snapshot_on_shutdown=false"};
  auto server = ServerProcess::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = (*server)->NewStub();
  // 2.4M coordinates: a snapshot copies them (24 bytes each) and encodes.
  int batch = 0;
  for (; batch < 12; ++batch) {
    grpc::ClientContext context;
    v1::UpdateResponse response;
    ASSERT_TRUE(stub->Update(&context, FreshBatch(batch), &response).ok());
  }
  CapAddressSpace((*server)->pid(), uint64_t{24} << 20);
  auto snapshot = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::SnapshotModelRequest request;
    request.set_model("default");
    v1::SnapshotModelResponse response;
    return stub->SnapshotModel(&context, request, &response);
  };
  const grpc::Status failed = snapshot();
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << failed.error_message();
  EXPECT_NE(failed.error_message().find("out of memory snapshotting"), std::string::npos)
      << failed.error_message();
  ASSERT_TRUE((*server)->running()) << (*server)->Output();

  // Memory back: it learns and snapshots again.
  const struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  ASSERT_EQ(prlimit((*server)->pid(), RLIMIT_AS, &unlimited, nullptr), 0);
  grpc::ClientContext context;
  v1::UpdateResponse response;
  EXPECT_TRUE(stub->Update(&context, FreshBatch(batch), &response).ok());
  const grpc::Status written = snapshot();
  EXPECT_TRUE(written.ok()) << written.error_message();
  EXPECT_EQ(Updates(*stub), 13u * 2000);
  stub.reset();
  EXPECT_EQ((*server)->Stop().ToString(), "exit 0");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace clickd
