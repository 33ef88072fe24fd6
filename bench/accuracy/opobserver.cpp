// opobserver.cpp -- reads the memtrack total after every aten operator.
//
// Why not a TorchDispatchMode: in torch 1.13 an active dispatch mode makes
// at::isTensorSubclassLike() return true for every tensor
// (ATen/TensorSubclassLikeUtils.h: `if (c10::impl::dispatch_mode_enabled())
// return true;`), which switches composite and backward code to their
// out-of-place "composite compliant" variants (linear's bias add_, select/
// slice backward, ...): the mode changes the memory it is measuring.
//
// Instead this library registers a global at::RecordFunction callback, which
// observes without changing dispatch.  The callback keeps a per-thread stack of
// operator frames and reads memtrack_current() when an operator that the
// Python dispatch key would see ends: an aten operator that has a backend or
// CompositeExplicitAutograd kernel and is not nested inside another such
// operator.  CompositeImplicitAutograd operators (linear, matmul, dropout,
// contiguous, ...) and autograd nodes (MmBackward0, AccumulateGrad) are
// transparent: the operators they call are read one by one.  Operators called
// inside a kernel (oneDNN reorders, at::empty scratch) are not read: the peak
// is that of live tensors between operators (SPEC.md section 4).
//
// Only the thread that called opobs_install() is observed (the autograd engine
// runs CPU backward on the calling thread).
#include <ATen/record_function.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" long long memtrack_current(void) __attribute__((weak));

namespace {

struct Frame {
  bool opaque;   // a kernel-level operator: its callees are kernel internals
  bool visible;  // not nested inside an opaque frame: read when it ends
};

thread_local bool t_observed = false;
thread_local std::vector<Frame> t_stack;

std::unordered_map<std::string, bool> g_opaque_cache;
at::CallbackHandle g_handle = 0;

long long g_base = 0;
long long g_peak = 0;
long long g_last = 0;
long long g_reads = 0;
int g_suppress = 0;
bool g_enabled = false;
FILE* g_log = nullptr;
std::string g_tag;
long long g_seq = 0;
std::string g_peak_where;

inline long long now() { return memtrack_current ? memtrack_current() : 0; }

bool is_opaque(const at::RecordFunction& fn) {
  if (fn.scope() != at::RecordScope::FUNCTION) return false;
  const char* nm = fn.name();
  if (!nm) return false;
  std::string key(nm);
  auto it = g_opaque_cache.find(key);
  if (it != g_opaque_cache.end()) return it->second;
  bool opaque = false;
  auto opn = fn.operator_name();
  if (opn) {
    auto h = c10::Dispatcher::singleton().findOp(*opn);
    if (h) {
      bool implicit = h->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
      bool backend = h->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
                     h->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
                     h->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
      opaque = backend || !implicit;
    }
  }
  g_opaque_cache.emplace(std::move(key), opaque);
  return opaque;
}

void do_read(const char* what) {
  long long c = now() - g_base;
  g_last = c;
  g_reads++;
  if (c > g_peak) {
    g_peak = c;
    g_peak_where = g_tag + "\t" + what;
  }
  if (g_log) {
    std::fprintf(g_log, "%lld\t%s\t%s\t%lld\n", g_seq++, g_tag.c_str(), what, c);
  }
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (!t_observed || !g_enabled) return nullptr;
  bool inside_opaque = !t_stack.empty() && !t_stack.back().visible;
  bool parent_opaque = !t_stack.empty() && t_stack.back().opaque;
  Frame f;
  if (inside_opaque || parent_opaque) {
    f.opaque = true;
    f.visible = false;
  } else {
    f.opaque = is_opaque(fn);
    f.visible = true;
  }
  t_stack.push_back(f);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!t_observed || t_stack.empty()) return;
  Frame f = t_stack.back();
  t_stack.pop_back();
  if (f.opaque && f.visible && g_suppress == 0) do_read(fn.name());
}

}  // namespace

extern "C" {

// Registers the callback; the calling thread is the observed one.
int opobs_install(void) {
  t_observed = true;
  if (!g_handle) {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_start, on_end).needsInputs(false).needsOutputs(false));
  }
  return memtrack_current ? 1 : 0;
}
// Start counting: baseline := the tracker's total now; peak := 0.
void opobs_start(void) { g_base = now(); g_peak = 0; g_enabled = true; }
void opobs_stop(void) { g_enabled = false; }
// Peak (relative to the baseline) of the readings since the last reset.
long long opobs_peak(void) { return g_peak; }
void opobs_reset_peak(void) { g_peak = now() - g_base; g_peak_where = g_tag + "\t(reset)"; }
// "tag<TAB>op" of the reading that set the peak.
const char* opobs_peak_where(void) { return g_peak_where.c_str(); }
long long opobs_current(void) { return now() - g_base; }
long long opobs_reads(void) { return g_reads; }
// Take a reading now (phase boundaries), labelled `what` in the log.
void opobs_read(const char* what) { if (g_enabled && g_suppress == 0) do_read(what); }
// Fused regions: Python replicas of one PyTorch 2.x operator; no reading
// inside, one reading (labelled `what`) when the outermost region ends.
void opobs_suppress_push(void) { g_suppress++; }
void opobs_suppress_pop(const char* what) {
  if (g_suppress > 0 && --g_suppress == 0 && g_enabled) do_read(what);
}
// Per-op log: one line per reading, "seq<TAB>tag<TAB>op<TAB>bytes".
int opobs_log_open(const char* path) {
  if (g_log) std::fclose(g_log);
  g_log = path && *path ? std::fopen(path, "w") : nullptr;
  return g_log ? 1 : 0;
}
void opobs_log_close(void) { if (g_log) std::fclose(g_log); g_log = nullptr; }
void opobs_tag(const char* tag) { g_tag = tag ? tag : ""; }
void opobs_log_line(const char* line) { if (g_log) std::fprintf(g_log, "# %s\n", line); }
}
