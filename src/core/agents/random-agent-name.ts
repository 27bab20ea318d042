/**
 * Letta's name for an agent created without one (`create_random_username`): an adjective and a noun,
 * each capitalised (`SincereYogurt`). The words are Letta's own lists (`letta/utils.py`, Apache-2.0),
 * repeated words dropped.
 */
const ADJECTIVES = words(`
  beautiful gentle angry vivacious grumpy luxurious fierce delicate fluffy radiant elated
  magnificent sassy ecstatic lustrous gleaming sorrowful majestic proud dynamic energetic
  mysterious loyal brave decisive frosty cheerful adorable melancholy vibrant elegant gracious
  inquisitive opulent peaceful rebellious scintillating dazzling whimsical impeccable meticulous
  resilient charming creative intuitive compassionate innovative enthusiastic tremendous
  effervescent tenacious fearless sophisticated witty optimistic exquisite sincere generous
  kindhearted serene amiable adventurous bountiful courageous diligent exotic grateful harmonious
  imaginative jubilant keen luminous nurturing outgoing passionate quaint resourceful sturdy
  tactful unassuming versatile wondrous youthful zealous ardent benevolent capricious dedicated
  empathetic fabulous gregarious humble intriguing jovial kind lovable mindful noble original
  pleasant quixotic reliable spirited tranquil unique venerable warmhearted xenodochial yearning
  zesty amusing blissful calm daring faithful graceful honest incredible joyful lovely merry
  quirky respectful sweet trustworthy understanding xenial ambitious brilliant careful devoted
  friendly glorious humorous intelligent knowledgeable modest nice obedient patient quiet selfless
  tolerant warm xerothermic yielding zestful amazing bold determined exciting funny happy jolly
  loving nifty outstanding polite quick thoughtful unusual valuable wonderful zealful admirable
  bright clever extraordinary hardworking inspiring lively miraculous neat openminded remarkable
  stunning truthful upbeat welcoming yare
`);

const NOUNS = words(`
  lizard firefighter banana castle dolphin elephant forest giraffe harbor iceberg jewelry kangaroo
  library mountain notebook orchard penguin quilt rainbow squirrel teapot umbrella volcano
  waterfall xylophone yacht zebra apple butterfly caterpillar dragonfly flamingo gorilla
  hippopotamus iguana jellyfish koala lemur mongoose nighthawk octopus panda quokka rhinoceros
  salamander tortoise unicorn vulture walrus xenopus yak zebu asteroid balloon compass dinosaur
  eagle firefly galaxy hedgehog island jaguar kettle lion mammoth nucleus owl pumpkin quasar
  reindeer snail tiger universe vampire wombat xerus yellowhammer zeppelin alligator buffalo
  cactus donkey emerald falcon gazelle hamster icicle jackal kitten leopard mushroom narwhal
  opossum peacock quail rabbit scorpion toucan urchin viper wolf xray yucca acorn biscuit cupcake
  daisy eyeglasses frisbee goblin hamburger jackfruit kaleidoscope lighthouse marshmallow
  nectarine obelisk pancake quicksand raspberry spinach truffle volleyball walnut xylophonist
  yogurt zucchini asterisk blackberry chimpanzee dumpling espresso fireplace gnome illustration
  jackhammer kumquat lemongrass mandolin nugget ostrich parakeet quiche racquet seashell tadpole
  vaccination wolverine yam accordion broccoli carousel daffodil eggplant grapefruit harpsichord
  impression jackrabbit llama mandarin nachos papaya rooster sunflower turnip ukulele waffle
  xylograph yeti zephyr abacus blueberry crocodile dandelion echidna fig kiwi lobster marmot
  noodle platypus raccoon starfish tulip
`);

function words(text: string): readonly string[] {
  return text.split(/\s+/).filter(Boolean);
}

const capitalised = (w: string) => w[0].toUpperCase() + w.slice(1);

/** `pick(n)`: a whole number from 0 to n - 1 (random in the server, fixed in a test). */
export function randomAgentName(pick: (n: number) => number): string {
  return capitalised(ADJECTIVES[pick(ADJECTIVES.length)]) + capitalised(NOUNS[pick(NOUNS.length)]);
}
