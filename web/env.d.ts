// Stylesheets are imported for the bundler, which emits them as one CSS file beside the script.
declare module '*.css'

/**
 * The alerts' temperature marks (src/modules/notifications/temperature.ts TEMPERATURE_MARKS), put in
 * by the console's build (src/modules/console/console.build.ts): a GPU at or above HOT opens a
 * critical incident; one below COOL resolves it.
 */
declare const __GPUHQ_HOT_C__: number
declare const __GPUHQ_COOL_C__: number
