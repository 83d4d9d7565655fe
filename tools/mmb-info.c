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
  for (int t = MMB_PROVIDER_SYSTEM; t <= MMB_PROVIDER_CUDA; t++) {
    if (!(mask & (1u << t))) continue;
    if (buf[0]) strncat(buf, ",", len - strlen(buf) - 1);
    strncat(buf, mmb_provider_name((mmbProviderType)t), len - strlen(buf) - 1);
  }
}

static void print_text(size_t n, const mmbSpaceInfo *info, bool cuda_built) {
  size_t gpus = 0;
  for (size_t i = 0; i < n; i++) gpus += info[i].layer == MMB_GDRAM;
  printf("mmb %d.%d.%d: %zu memory spaces; CUDA provider %s, %zu GPU%s\n", MMB_VERSION_MAJOR,
         MMB_VERSION_MINOR, MMB_VERSION_PATCH, n, cuda_built ? "built" : "not built", gpus,
         gpus == 1 ? "" : "s");
  printf("%-3s %-24s %-7s %-9s %-5s %-4s %-11s %-11s %s\n", "#", "space", "layer", "context",
         "numa", "gpu", "capacity", "limit", "providers (default first)");
  for (size_t i = 0; i < n; i++) {
    const mmbSpaceInfo *s = &info[i];
    char cap[32], lim[32], prov[64], numa[16] = "-", gpu[16] = "-";
    human(s->capacity, cap, sizeof cap);
    human(s->limit, lim, sizeof lim);
    providers(s->providers & ~(1u << s->default_provider), prov, sizeof prov);
    if (s->numa_node >= 0) snprintf(numa, sizeof numa, "%d", s->numa_node);
    if (s->device >= 0) snprintf(gpu, sizeof gpu, "%d", s->device);
    printf("%-3zu %-24s %-7s %-9s %-5s %-4s %-11s %-11s %s%s%s\n", i, s->name,
           mmb_layer_name(s->layer), mmb_context_name(s->context), numa, gpu, cap, lim,
           mmb_provider_name(s->default_provider), prov[0] ? "," : "", prov);
  }
}

static void print_json(size_t n, const mmbSpaceInfo *info, bool cuda_built) {
  printf("{\"version\": \"%d.%d.%d\", \"cuda_provider\": %s, \"spaces\": [", MMB_VERSION_MAJOR,
         MMB_VERSION_MINOR, MMB_VERSION_PATCH, cuda_built ? "true" : "false");
  for (size_t i = 0; i < n; i++) {
    const mmbSpaceInfo *s = &info[i];
    printf("%s\n  {\"index\": %zu, \"name\": \"%s\", \"layer\": \"%s\", \"context\": \"%s\", "
           "\"numa_node\": %d, \"device\": %d, \"capacity\": %zu, \"limit\": %zu, "
           "\"default_provider\": \"%s\", \"providers\": [",
           i ? "," : "", i, s->name, mmb_layer_name(s->layer), mmb_context_name(s->context),
           s->numa_node, s->device, s->capacity, s->limit, mmb_provider_name(s->default_provider));
    bool first = true;
    for (int t = MMB_PROVIDER_SYSTEM; t <= MMB_PROVIDER_CUDA; t++) {
      if (!(s->providers & (1u << t))) continue;
      printf("%s\"%s\"", first ? "" : ", ", mmb_provider_name((mmbProviderType)t));
      first = false;
    }
    printf("]}");
  }
  printf("\n]}\n");
}

int main(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      fprintf(stderr, "usage: %s [--json]\n"
                      "  Lists the memory spaces mmb discovers on this node.\n"
                      "  MMB_LIMIT_<DRAM|HBM|NVDIMM|GDRAM>=size caps a layer.\n", argv[0]);
      return strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ? 0 : 2;
    }
  }
  mmbError err = mmb_init(NULL);
  if (err != MMB_OK) {
    fprintf(stderr, "mmb-info: mmb_init: %s\n", mmb_error_string(err));
    return 1;
  }
  size_t n = 0;
  mmbSpaceInfo info[256];
  if ((err = mmb_space_count(&n)) != MMB_OK) goto failed;
  if (n > 256) n = 256;
  for (size_t i = 0; i < n; i++) {
    mmbMemSpace *space;
    if ((err = mmb_space_at(i, &space)) != MMB_OK ||
        (err = mmb_space_get_info(space, &info[i])) != MMB_OK)
      goto failed;
  }
  const mmbProviderOps *ops;
  bool cuda_built = mmb_provider_get_ops(MMB_PROVIDER_CUDA, &ops) == MMB_OK;
  if (json) print_json(n, info, cuda_built);
  else print_text(n, info, cuda_built);
  return mmb_finalize() == MMB_OK ? 0 : 1;
failed:
  fprintf(stderr, "mmb-info: reading the spaces: %s\n", mmb_error_string(err));
  return 1;
}
