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
//
// Wrapped numbers (the 0-d CPU tensors PyTorch makes from Python or C++ scalars,
// `x * 0.5`, `t.add_(1)`) are CPU tensors on a CUDA machine too: when one is
// seen among an operator's inputs it is removed from the memtrack total.
#include <ATen/record_function.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" long long memtrack_current(void) __attribute__((weak));
extern "C" long long memtrack_forget(void*) __attribute__((weak));

namespace {

struct Frame {
  bool opaque;   // a kernel-level operator: its callees are kernel internals
  bool visible;  // not nested inside an opaque frame: read when it ends
  bool skip;     // an InputBuffer accumulation 2.x does in place: no reading
  bool engine;   // "autograd::engine::evaluate_function: <Node>" (transparent)
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
long long g_forgotten = 0;
bool g_backward = false;
bool g_compat_2x = true;
long long g_accum_inplace = 0, g_accum_copy = 0;
int g_debug = -1;

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
  long long delta = c - g_last;
  g_last = c;
  g_reads++;
  if (c > g_peak) {
    g_peak = c;
    g_peak_where = g_tag + "\t" + what;
  }
  if (g_log) {
    std::fprintf(g_log, "%lld\t%s\t%s\t%lld\t%+lld\n", g_seq++, g_tag.c_str(), what, c, delta);
  }
}

void forget_wrapped_numbers(const at::RecordFunction& fn) {
  if (!memtrack_forget || !fn.needsInputs()) return;
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.unsafeGetTensorImpl()->is_wrapped_number() && t.device().is_cpu() &&
        t.has_storage()) {
      void* p = t.storage().data();
      if (p) g_forgotten += memtrack_forget(p);
    }
  }
}

// torch 1.13's InputBuffer::accumulate always computes `old_var + var`; 2.x
// (torch/csrc/autograd/input_buffer.cpp) does `old_var.add_(var)` when
// can_accumulate_inplace(old_var): a plain non-overlapping dense tensor whose
// TensorImpl and storage are referenced only by the buffer.  The engine calls
// it from evaluate_function after the node ran, so it is an aten::add directly
// inside an "autograd::engine::evaluate_function: ..." frame.  Here the boxed
// argument vector holds one more reference to old_var.
bool accumulation_2x_inplace(const at::RecordFunction& fn) {
  if (!g_backward || t_stack.empty() || !t_stack.back().engine || !fn.needsInputs()) return false;
  const char* nm = fn.name();
  if (!nm || std::strcmp(nm, "aten::add") != 0) return false;
  auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return false;
  const at::Tensor& old_var = in[0].toTensor();
  const at::Tensor& var = in[1].toTensor();
  bool ok = old_var.defined() && var.defined() && old_var.layout() == c10::kStrided &&
            old_var.is_non_overlapping_and_dense() && old_var.has_storage() &&
            old_var.use_count() <= 2 && old_var.storage().use_count() == 1 &&
            old_var.sizes().equals(var.sizes()) && old_var.scalar_type() == var.scalar_type();
  if (g_debug) {
    std::fprintf(stderr, "opobs: accumulate use_count=%ld storage_use_count=%ld -> %s\n",
                 (long)old_var.use_count(), (long)old_var.storage().use_count(),
                 ok ? "in place (2.x)" : "new tensor");
  }
  if (ok) g_accum_inplace++; else g_accum_copy++;
  return ok;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (!t_observed || !g_enabled) return nullptr;
  if (g_debug < 0) {
    const char* e = std::getenv("OPOBS_DEBUG");
    g_debug = (e && *e == '1') ? 1 : 0;
  }
  forget_wrapped_numbers(fn);
  bool inside_opaque = !t_stack.empty() && !t_stack.back().visible;
  bool parent_opaque = !t_stack.empty() && t_stack.back().opaque;
  Frame f;
  f.skip = false;
  f.engine = false;
  if (inside_opaque || parent_opaque) {
    f.opaque = true;
    f.visible = false;
  } else {
    f.skip = g_compat_2x && accumulation_2x_inplace(fn);
    f.opaque = is_opaque(fn);
    f.visible = true;
    const char* nm = fn.name();
    f.engine = !f.opaque && nm && std::strncmp(nm, "autograd::engine::evaluate_function", 35) == 0;
  }
  t_stack.push_back(f);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!t_observed || t_stack.empty()) return;
  Frame f = t_stack.back();
  t_stack.pop_back();
  if (f.opaque && f.visible && !f.skip && g_suppress == 0) do_read(fn.name());
}

}  // namespace

extern "C" {

// Registers the callback; the calling thread is the observed one.
int opobs_install(void) {
  t_observed = true;
  if (!g_handle) {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_start, on_end).needsInputs(true).needsOutputs(false));
  }
  return memtrack_current ? 1 : 0;
}
// Start counting: baseline := the tracker's total now; peak := 0.
void opobs_start(void) { g_base = now(); g_peak = 0; g_last = 0; g_enabled = true; }
void opobs_stop(void) { g_enabled = false; }
// Peak (relative to the baseline) of the readings since the last reset.
long long opobs_peak(void) { return g_peak; }
void opobs_reset_peak(void) { g_peak = now() - g_base; g_peak_where = g_tag + "\t(reset)"; }
// "tag<TAB>op" of the reading that set the peak.
const char* opobs_peak_where(void) { return g_peak_where.c_str(); }
long long opobs_current(void) { return now() - g_base; }
long long opobs_reads(void) { return g_reads; }
// Backward phase on/off (InputBuffer accumulation compensation applies).
void opobs_set_backward(int on) { g_backward = on != 0; }
// 1 (default): emulate 2.x's in-place InputBuffer accumulation; 0: 1.13 as is.
void opobs_set_compat_2x(int on) { g_compat_2x = on != 0; }
long long opobs_accum_inplace(void) { return g_accum_inplace; }
long long opobs_accum_copy(void) { return g_accum_copy; }
// Bytes of wrapped-number tensors removed from the total so far.
long long opobs_forgotten(void) { return g_forgotten; }
// Take a reading now (phase boundaries), labelled `what` in the log.
void opobs_read(const char* what) { if (g_enabled && g_suppress == 0) do_read(what); }
// Fused regions: Python replicas of one PyTorch 2.x operator; no reading
// inside, one reading (labelled `what`) when the outermost region ends.
void opobs_suppress_push(void) { g_suppress++; }
void opobs_suppress_pop(const char* what) {
  if (g_suppress > 0 && --g_suppress == 0 && g_enabled) do_read(what);
}
// Per-op log: one line per reading, "seq<TAB>tag<TAB>op<TAB>bytes<TAB>delta"
// (bytes since the baseline; delta since the previous reading).
int opobs_log_open(const char* path) {
  if (g_log) std::fclose(g_log);
  g_log = path && *path ? std::fopen(path, "w") : nullptr;
  return g_log ? 1 : 0;
}
void opobs_log_close(void) { if (g_log) std::fclose(g_log); g_log = nullptr; }
void opobs_tag(const char* tag) { g_tag = tag ? tag : ""; }
void opobs_log_line(const char* line) { if (g_log) std::fprintf(g_log, "# %s\n", line); }
}
