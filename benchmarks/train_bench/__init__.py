"""The parts of benchmarks/train_throughput.py, which is its command line.

sizes        how large each measured run is on a device, and the threads per worker
processes    child processes that stop cleanly on a timeout
runner       navzoo training runs in their own processes, summarised from their log.jsonl
tables       the printed tables and notes of the sections
targets      the throughput targets and their verdicts
presets      section `presets`: every preset at a size the device can run
workers      section `workers`: 1 and more workers
hetero       section `hetero`: a costlier simulator on one worker, with and without preemption
probe_child  the simulator-only timing of the hetero section (a child process)
sb3          section `sb3`: navzoo's trainer against sb3-contrib's RecurrentPPO
sb3_child    RecurrentPPO measured with navzoo's network (a child process)
results      the JSON file of the sections
"""
