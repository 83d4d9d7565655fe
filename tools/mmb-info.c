/* mmb-info: the node's memory spaces as mmb sees them (layer, context, NUMA
   node or GPU, capacity, limit, providers). `--json` for scripts. */
#include <mmb/mmb.h>

#include <stdio.h>
#include <string.h>

static void human(size_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes == (size_t)-1) {
    snprintf(buf, len, "none");
    return;
  }
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, u++;
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void providers(unsigned mask, char *buf, size_t len) {
  buf[0] = '\0';
  for (int t = MMB_PROVIDER_SYSTEM; t <= MMB_PROVIDER_FILE; t++) {
    if (!(mask & (1u << t))) continue;
    if (buf[0]) strncat(buf, ",", len - strlen(buf) - 1);
    strncat(buf, mmb_provider_name((mmbProviderType)t), len - strlen(buf) - 1);
  }
}

/* What the library says of the node besides its spaces. */
typedef struct node_facts {
  bool cuda_built;
  int gpus;
  const char *no_gpu_reason;   /* NULL with GPUs */
} node_facts;

static void attribute(unsigned long long v, const char *unit, char *buf, size_t len) {
  if (v) snprintf(buf, len, "%llu %s", v, unit);
  else snprintf(buf, len, "-");
}

/* NUMA distances between the host spaces' nodes, when the machine has them. */
static bool distance(mmbMemSpace *const *spaces, size_t i, size_t j, unsigned *d) {
  return mmb_space_distance(spaces[i], spaces[j], d) == MMB_OK;
}

/* A space's tile cache settings (mmb/cache.h): its budget, whether that
   is the space's limit (nothing set one), its clean share. */
typedef struct cache_settings {
  unsigned long long budget;
  bool is_limit;
  double clean_share;
} cache_settings;

static cache_settings cache_of(mmbMemSpace *space) {
  mmbCacheConfig cfg = {0};
  mmbCacheStats st = {0};
  if (mmb_space_get_cache(space, &cfg) != MMB_OK || mmb_space_get_cache_stats(space, &st) != MMB_OK)
    return (cache_settings){0, true, 0.5};
  return (cache_settings){st.budget_bytes, cfg.budget_bytes == 0, cfg.clean_share};
}

static void print_text(size_t n, const mmbSpaceInfo *info, mmbMemSpace *const *spaces,
                       const node_facts *f) {
  printf("mmb %s: %zu memory spaces; CUDA provider %s, %d GPU%s", mmb_version(NULL, NULL, NULL),
         n, f->cuda_built ? "built" : "not built", f->gpus, f->gpus == 1 ? "" : "s");
  if (f->no_gpu_reason) printf(" (%s)", f->no_gpu_reason);
  printf("\n%-3s %-24s %-7s %-9s %-5s %-4s %-11s %-11s %-12s %-8s %s\n", "#", "space", "layer",
         "context", "numa", "gpu", "capacity", "limit", "bandwidth", "latency",
         "providers (default first)");
  for (size_t i = 0; i < n; i++) {
    const mmbSpaceInfo *s = &info[i];
    char cap[32], lim[32], prov[64], numa[16] = "-", gpu[16] = "-", bw[32], lat[32];
    human(s->capacity, cap, sizeof cap);
    human(s->limit, lim, sizeof lim);
    attribute(s->bandwidth, "MiB/s", bw, sizeof bw);
    attribute(s->latency, "ns", lat, sizeof lat);
    unsigned others = s->default_provider < 32 ? ~(1u << s->default_provider) : ~0u;
    providers(s->providers & others, prov, sizeof prov);
    if (s->numa_node >= 0) snprintf(numa, sizeof numa, "%d", s->numa_node);
    if (s->device >= 0) snprintf(gpu, sizeof gpu, "%d", s->device);
    printf("%-3zu %-24s %-7s %-9s %-5s %-4s %-11s %-11s %-12s %-8s %s%s%s\n", i, s->name,
           mmb_layer_name(s->layer), mmb_context_name(s->context), numa, gpu, cap, lim, bw, lat,
           s->default_provider == MMB_PROVIDER_DEFAULT ? "none (a device-only layer)"
                                                       : mmb_provider_name(s->default_provider),
           prov[0] ? "," : "", prov);
  }
  printf("tile caches (MMB_CACHE, mmb_space_set_cache):\n%-3s %-24s %-22s %s\n", "#", "space",
         "budget", "clean share");
  for (size_t i = 0; i < n; i++) {
    cache_settings c = cache_of(spaces[i]);
    char budget[32], shown[48];
    human(c.budget, budget, sizeof budget);
    snprintf(shown, sizeof shown, "%s%s", budget, c.is_limit ? " (the limit)" : "");
    printf("%-3zu %-24s %-22s %.2f\n", i, info[i].name, shown, c.clean_share);
  }
  unsigned d;
  bool any = false;
  for (size_t i = 0; i < n && !any; i++) any = distance(spaces, i, i, &d);
  if (!any) {
    printf("NUMA distances: none given by this machine\n");
    return;
  }
  printf("NUMA distances (10 = local):\n%-4s", "");
  for (size_t j = 0; j < n; j++) printf(" %4zu", j);
  printf("\n");
  for (size_t i = 0; i < n; i++) {
    printf("%-4zu", i);
    for (size_t j = 0; j < n; j++) {
      if (distance(spaces, i, j, &d)) printf(" %4u", d);
      else printf(" %4s", "-");
    }
    printf("\n");
  }
}

static void json_string(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

static void print_json(size_t n, const mmbSpaceInfo *info, mmbMemSpace *const *spaces,
                       const node_facts *f) {
  printf("{\"version\": \"%s\", \"cuda_provider\": %s, \"gpus\": %d, \"no_gpu_reason\": ",
         mmb_version(NULL, NULL, NULL), f->cuda_built ? "true" : "false", f->gpus);
  if (f->no_gpu_reason) json_string(f->no_gpu_reason);
  else printf("null");
  printf(", \"spaces\": [");
  for (size_t i = 0; i < n; i++) {
    const mmbSpaceInfo *s = &info[i];
    printf("%s\n  {\"index\": %zu, \"name\": ", i ? "," : "", i);
    json_string(s->name);
    printf(", \"layer\": \"%s\", \"context\": \"%s\", \"numa_node\": %d, \"device\": %d, "
           "\"capacity\": %zu, \"limit\": %zu, \"bandwidth_mib_s\": %llu, \"latency_ns\": %llu, "
           "\"emulated\": %s, \"default_provider\": \"%s\", \"providers\": [",
           mmb_layer_name(s->layer), mmb_context_name(s->context), s->numa_node, s->device,
           s->capacity, s->limit, s->bandwidth, s->latency, s->emulated ? "true" : "false",
           mmb_provider_name(s->default_provider));
    bool first = true;
    for (int t = MMB_PROVIDER_SYSTEM; t <= MMB_PROVIDER_FILE; t++) {
      if (!(s->providers & (1u << t))) continue;
      printf("%s\"%s\"", first ? "" : ", ", mmb_provider_name((mmbProviderType)t));
      first = false;
    }
    cache_settings c = cache_of(spaces[i]);
    printf("], \"cache\": {\"budget_bytes\": %llu, \"budget_is_limit\": %s, "
           "\"clean_share\": %g}, \"distances\": [", (unsigned long long)c.budget,
           c.is_limit ? "true" : "false", c.clean_share);
    for (size_t j = 0; j < n; j++) {
      unsigned d;
      if (distance(spaces, i, j, &d)) printf("%s%u", j ? ", " : "", d);
      else printf("%snull", j ? ", " : "");
    }
    printf("]}");
  }
  printf("\n]}\n");
}

static const char usage[] =
    "usage: mmb-info [--json] [--version] [--help]\n"
    "  Lists the memory spaces mmb discovers on this node: layer, NUMA node or GPU,\n"
    "  capacity, limit, hwloc's bandwidth and latency, NUMA distances, providers;\n"
    "  and whether there are GPUs (if not, why).\n"
    "  --json     one JSON object, for scripts\n"
    "  --version  the version of the mmb library\n"
    "  MMB_LIMIT_<DRAM|HBM|NVDIMM|GDRAM|STORAGE>=size caps a layer; MMB_EMULATE=HBM:4G adds\n"
    "  an emulated tier; MMB_CACHE=HBM:2G[:clean=0.5] sets the tile caches' budget\n"
    "  in a layer's spaces (man mmb).\n";

int main(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--version") == 0) {
      printf("mmb-info %s (headers %s)\n", mmb_version(NULL, NULL, NULL), MMB_VERSION_STRING);
      return 0;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "mmb-info: unknown option '%s'\n%s", argv[i], usage);
      return 2;
    }
  }
  mmbError err = mmb_init(NULL);
  if (err != MMB_OK) {
    fprintf(stderr, "mmb-info: mmb_init: %s\n", mmb_error_string(err));
    return 1;
  }
  size_t n = 0;
  mmbSpaceInfo info[256];
  mmbMemSpace *spaces[256];
  node_facts f = {0};
  const mmbProviderOps *ops;
  f.cuda_built = mmb_provider_get_ops(MMB_PROVIDER_CUDA, &ops) == MMB_OK;
  if ((err = mmb_space_count(&n)) != MMB_OK ||
      (err = mmb_cuda_status(&f.gpus, &f.no_gpu_reason)) != MMB_OK)
    goto failed;
  if (n > 256) n = 256;
  for (size_t i = 0; i < n; i++)
    if ((err = mmb_space_at(i, &spaces[i])) != MMB_OK ||
        (err = mmb_space_get_info(spaces[i], &info[i])) != MMB_OK)
      goto failed;
  if (json) print_json(n, info, spaces, &f);
  else print_text(n, info, spaces, &f);
  return mmb_finalize() == MMB_OK ? 0 : 1;
failed:
  fprintf(stderr, "mmb-info: reading the spaces: %s\n", mmb_error_string(err));
  return 1;
}
